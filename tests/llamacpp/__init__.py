"""The real-llama.cpp tier: tiny synthetic models of each family the llama.cpp profile claims,
built and measured by the llama.cpp that llama-cpp-python's source distribution compiles."""
