"""ATC-style errors: a code, a message built from GE's error-registry templates, no traceback."""
from __future__ import annotations

# Templates of GE's error registry (base/common/error_registry/error_registry.cc) that atc-py raises.
TEMPLATES: dict[str, str] = {
    "E10001": "Value {value} for parameter {parameter} is invalid. Reason: {reason}",
    "E10002": "Value {value} for parameter --input_shape is invalid. Reason: {reason}. "
              "The value must be formatted as {sample}.",
    "E10003": "Value {value} for parameter --{parameter} is invalid. Reason: {reason}",
    "E10004": "Value for --{parameter} is empty.",
    "E10005": "Value {value} for parameter --{parameter} is invalid. The value must be either true or false.",
    "E10006": "Value {value} for parameter --{parameter} is invalid. The value must be either 1 or 0.",
    "E10007": "--{parameter} is required. The value must be {support}.",
    "E10009": "--dynamic_batch_size, --dynamic_image_size, --input_shape_range, and --dynamic_dims are mutually "
              "exclusive.",
    "E10018": "Value {shape} for shape {index} is invalid. When --dynamic_batch_size is included, only batch size N "
              "can be -1 in --input_shape.",
    "E10019": "When --dynamic_image_size is included, only the height and width axes can be -1 in --input_shape.",
    "E10020": "Value {dynamic_image_size} for parameter --dynamic_image_size is invalid.",
    "E10031": "--dynamic_batch_size is included, but none of the nodes specified in --input_shape has a batch size "
              "equaling -1.",
    "E10035": "--dynamic_batch_size, --dynamic_image_size, or --dynamic_dims has {shapesize} profiles, which is less "
              "than the minimum {minshapesize}.",
    "E10036": "--dynamic_batch_size, --dynamic_image_size, or --dynamic_dims has {shapesize} profiles, which is greater "
              "than the maximum {maxshapesize}.",
    "E10037": "The profiles configured in --dynamic_batch_size, --dynamic_image_size, or --dynamic_dims have "
              "inconsistent dimension counts. A profile has {shapesize1} dimensions while another has {shapesize2} "
              "dimensions.",
    "E10038": "Dimension size {dim} is invalid. The value must be greater than 0.",
    "E10039": "The --dynamic_batch_size, --dynamic_image_size, or --dynamic_dims argument have duplicate profiles.",
    "E10040": "As the --dynamic_batch_size, --dynamic_image_size, or --dynamic_dims argument is included, the "
              "corresponding nodes specified in --input_shape must have -1 axes and cannot have '~'.",
    "E10010": "Value {value} for parameter --log is invalid.",
    "E10011": "Value {value} for parameter --input_shape is invalid. Shape values must be positive integers. "
              "The error value in the shape is {result}.",
    "E10016": "Opname {opname} specified in --{parameter} is not found in the model. Confirm whether this node "
              "name exists, or the node is not split with the specified delimiter ';'.",
    "E10017": "Input Op {opname} specified in --{parameter} is invalid. The Op type must be Data.",
    "E10021": "Path for parameter --{parameter} is too long. Keep the length within {max_len}.",
    "E10022": "Path {path} for parameter --{parameter} does not include the file name.",
    "E10034": "Nodes (for example, {opname}) connected to AIPP must not be of type fp16.",
    "E10041": "Failed to load the model from {path}. Reason: {reason}",
    "E10048": "Value {shape_range} for parameter --input_shape_range or dynamic_inputs_shape_range is invalid. Reason: "
              "{reason}. The value must be formatted as {sample}.",
    "E10050": "Current dimension size {cur_dim} is not in the range of {shape_range_left}–{shape_range_right} specified "
              "by --input_shape.",
    "E10052": "AIPP configuration is invalid. Reason: {reason}.",
    "E10054": "The required parameter --soc_version for ATC is empty. Another possible reason is that the "
              "values of some parameters are not enclosed by quotation marks (\"\").",
    "E10055": "The operation is not supported. Reason: {reason}.",
    "E10056": "Cannot configure both parameters {parameter1} and {parameter2} simultaneously.",
    "E10057": "--{parameter0} and --{parameter1} can only be used together.",
    "E10013": "Value {value} for --{parameter} is out of range.",
    "E12009": "Input {input} for Op {opname} is not found in graph_def.",
    "E13001": "Failed to open file {file}. Reason: {errmsg}.",
    "E13003": "Failed to read file {file}. Reason: {errmsg}.",
    "E13004": "Failed to write file {file}. Reason: {errmsg}.",
    "E13009": "Operator {opname} already exists in the graph. Ensure that operator names are unique.",
    "E13014": "Value {value} of parameter {parameter} for Op {opname} is invalid. Reason: {reason}.",
    "E13015": "File {file} has a size of {size}, which is out of valid range (0, {maxsize}].",
    "E13018": "Failed to parse file {protofile} through google::protobuf::TextFormat::Parse.",
    "E13023": "Model {item} has a size of {size} bytes, which exceeds system limit of {maxsize} bytes.",
    "E13025": "Input tensor is invalid. Reason: {reason}.",
    "E14001": "Argument {value} for Op {opname} with optype {optype} is invalid. Reason: {reason}.",
    "E16001": "The model has no {value} node.",
    "E16004": "ONNX model has no graph.",
    "E16005": "The model has {domain_version_size} --domain_version fields, but only one is allowed.",
    "E19010": "No parser is registered for the following ops: {ops}.",
    "E19999": "{message}",
    # om-run / loader errors (our own family, msame has no registry)
    "E30001": "Failed to load model {path}: {reason}",
    "E30002": "Invalid input for om-run: {reason}",
    "E30003": "Output mismatch: {reason}",
    "E30004": "Execution failed while executing task {task}: {reason}",
    "E30005": "Hazard: {detail} (run with --allow-hazards to continue)",
    "E30007": "Execution stopped at task {task}: {reason}",
    "E30008": "om-run {feature} needs {package}, which is not installed: pip install 'atc-py[{extra}]'",
    # om-sweep errors (our own family): the command's own errors and the statuses of jobs that did not finish
    "E40001": "Invalid sweep file {path}: {field}: {reason}",
    "E40002": "Cannot read sweep file {path}: {reason}",
    "E40003": "File not found for {field}: {path}",
    "E40004": "The job exceeded its time limit of {limit} s and was stopped",
    "E40005": "The job exceeded its memory limit of {limit} MiB: {reason}",
    "E40006": "The job's process died in each of {attempts} attempt(s): {reason}",
    "E40007": "Cannot use the Dask scheduler {address}: {reason}",
    "E40008": "om-sweep needs {package}, which is not installed: pip install 'atc-py[sweep]'",
    "E40009": "Cannot read results file {path}: {reason}",
    "E40010": "Cannot write {path}: {reason}",
    "E40011": "Invalid option {option}: {reason}",
    "E40012": "The Dask cluster {address} has had no worker for {seconds} s: {reason}",
}


class AtcError(Exception):
    """A user-facing error: `code: message`. Raised anywhere, printed once by the CLI."""

    def __init__(self, code: str, **fields: object) -> None:
        self.code = code
        self.fields = fields
        template = TEMPLATES.get(code, "{message}")
        try:
            self.message = template.format(**fields)
        except KeyError as missing:  # a programming error in the raiser; still report cleanly
            self.message = f"{template} (missing field {missing})"
        super().__init__(f"{code}: {self.message}")

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def internal(message: str) -> AtcError:
    """E19999 for conditions the user cannot fix (a bug or an unsupported corner)."""
    return AtcError("E19999", message=message)
