"""The wire: what the service answers and the browser reads, typed and laid out once.

The JSON payloads (:mod:`.types`, with the canvas drawing's in :mod:`.payloads`), a reply and its
binary framing (:mod:`.reply`, :mod:`.framing`), and the buffer layouts of binary replies
(:mod:`.buffers` says how a layout reads, :mod:`.layouts` holds every request's). It sits below
the studio and the service, so the studio's builders and the service's features fill the same
types without either importing the other's layer; ``make types`` generates the browser's copy.
"""
