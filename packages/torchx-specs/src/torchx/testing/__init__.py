"""Test helpers for projects built on TorchX (plugins, components, schedulers): shipped,
unlike TorchX's own tests, so a plugin's test suite can use them."""
