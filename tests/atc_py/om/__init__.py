"""The .om file: container, protobuf schemas, tensor descriptors, golden JSON dumps."""
