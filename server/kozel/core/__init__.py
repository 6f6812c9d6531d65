"""The referee's sans-I/O core: the seat protocol of a match (clock, requests, strikes,
forfeits, sealed windows, resume) and the messages it sends, as plain synchronous objects.

Nothing here does I/O, touches asyncio or gRPC, or reads a clock: callers pass the time in.
It depends on the engine and the generated protocol messages only.
"""

from kozel.core import native as _native

if _native.wanted():  # the compiled protocol, requests, penalties and messages
    __path__.insert(0, str(_native.FOLDER))
