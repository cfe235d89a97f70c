"""Launch, watch and stop TorchX apps from Python."""
