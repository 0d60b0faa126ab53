"""Tests of the compiler, one folder per package of atc_py."""
