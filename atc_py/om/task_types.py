"""GE's enums for tasks (rtModelTaskType_t) and kernels (ccKernelType): values of the .om's task records,
which the engines write and om/model_info and om-run read."""

# ModelTaskType / rtModelTaskType_t
KERNEL = 0
EVENT_RECORD = 1
EVENT_WAIT = 2
HCCL = 6                        # RT_MODEL_TASK_HCCL: a collective (TaskDef.kernel_hccl)
STREAM_SWITCH = 7
STREAM_ACTIVE = 8
LABEL_SET = 9
MEMCPY_ASYNC = 13
LABEL_SWITCH_BY_INDEX = 23      # RT_MODEL_TASK_STREAM_LABEL_SWITCH_BY_INDEX
LABEL_GOTO_EX = 24              # RT_MODEL_TASK_STREAM_LABEL_GOTO
ALL_KERNEL = 26
FFTS_PLUS_TASK = 29
UPDATE = 41
NOP = 42
PREPROCESS_KERNEL = 43
SUPER_KERNEL = 44

TASK_TYPE_NAMES = {KERNEL: "KERNEL", EVENT_RECORD: "EVENT_RECORD", EVENT_WAIT: "EVENT_WAIT",
                   ALL_KERNEL: "ALL_KERNEL", FFTS_PLUS_TASK: "FFTS_PLUS_TASK", UPDATE: "UPDATE", NOP: "NOP",
                   PREPROCESS_KERNEL: "PREPROCESS_KERNEL", SUPER_KERNEL: "SUPER_KERNEL",
                   STREAM_SWITCH: "STREAM_SWITCH", STREAM_ACTIVE: "STREAM_ACTIVE", LABEL_SET: "LABEL_SET",
                   MEMCPY_ASYNC: "MEMCPY_ASYNC", LABEL_SWITCH_BY_INDEX: "LABEL_SWITCH_BY_INDEX",
                   LABEL_GOTO_EX: "LABEL_GOTO_EX", HCCL: "HCCL"}
RT_MEMCPY_DEVICE_TO_DEVICE = 3   # rtMemcpyKind_t

# ccKernelType
TE = 2
AI_CPU = 6
CUST_AI_CPU = 7

ENGINE_LIB_NAME = {"AICORE": "AIcoreEngine", "AICPU": "aicpu_ascend_kernel", "HCCL": "ops_kernel_info_hccl"}
