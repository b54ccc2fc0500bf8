"""One module per pass (or small family of passes), each a `ModulePass` with its patterns."""
