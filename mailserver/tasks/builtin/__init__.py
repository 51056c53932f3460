"""The task types WebAdmin submits; ``registration.register_builtin`` makes a node able to run them."""
