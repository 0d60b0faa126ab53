
3
x0Placeholder*
dtype0*
shape
:
/
x1Placeholder*
dtype0*
shape:
3
x2Placeholder*
dtype0*
shape
:
/
x3Placeholder*
dtype0*
shape:
%
floordivFloorDivx0x1*
T0
'
IdentityIdentityfloordiv*
T0
%
FloorModFloorModx0x1*
T0
)

Identity_1IdentityFloorMod*
T0
'

floordiv_1FloorDivx2x3*
T0
+

Identity_2Identity
floordiv_1*
T0
'

FloorMod_1FloorModx2x3*
T0
+

Identity_3Identity
FloorMod_1*
T0"ª