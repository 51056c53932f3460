"""The JMAP methods, each in the module of its data type."""
