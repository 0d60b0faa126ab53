"""TensorFlow frozen GraphDef (--framework=3) -> IR, with our own minimal GraphDef schema."""
