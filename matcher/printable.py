"""Text from users and their data made safe for a terminal, for the core and the jobs: the
one escape (``printable``) every command's lines and every error line go through.
``parity.views.printable`` re-exports it beside the value formatting the views use.

    printable("bad\x1b[2Jname")          # 'bad\\x1b[2Jname'
"""

from __future__ import annotations


def printable(text: str, *, keep: str = "") -> str:
    """``text`` safe to show on a terminal: every character a terminal acts on or that
    reorders what it shows (C0 and C1 controls, DEL, so every escape sequence; bidirectional
    overrides and the other format characters; separators but the space) as its Python
    escape, ``\\x1b``, ``\\u202e``. ``keep``: characters left as they are (``"\\n"`` where text
    is printed line by line anyway)."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in keep else repr(c)[1:-1] for c in text)


def error_line(program: str, message: str) -> str:
    """``PROGRAM: error: MESSAGE``: whitespace folded to one line, control characters
    escaped (an exception's text may quote a hostile value or a user function's message)."""
    return f"{program}: error: {printable(' '.join(message.split()))}"


def warning_line(program: str, message: str) -> str:
    """``PROGRAM: warning: MESSAGE``, made as ``error_line`` makes an error line."""
    return f"{program}: warning: {printable(' '.join(message.split()))}"
