"""A module whose import fails, for the bridge's test."""
import attnprof_no_such_module  # noqa: F401


def attention(q, k, v, **_):
    return q
