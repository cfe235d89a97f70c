"""Components of the example plugin (``torchx run example.hello``)."""

from __future__ import annotations

from torchx import specs


def hello(msg: str = "hello from a plugin", h: str = "example_small") -> specs.AppDef:
    """Prints a message, on the plugin's own named resource.

    Args:
        msg: what to print
        h: named resource of the replica
    """
    role = specs.Role(
        name="hello",
        image=specs.NONE,
        entrypoint="echo",
        args=[msg],
        resource=specs.resource(h=h),
    )
    return specs.AppDef(name="hello", roles=[role])
