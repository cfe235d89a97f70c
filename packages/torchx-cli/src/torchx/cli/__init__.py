"""The torchx command line."""
