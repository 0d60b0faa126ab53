"""Running a model: flags, msame and ais_bench inputs and outputs, hostile inputs."""
