"""The proxy's listening socket answers without Nagle's delay (issue 29: a constant ~45 ms a
pass-through request came from accepted connections without TCP_NODELAY: asyncio sets it only on a
socket that says it is TCP, and ``listen`` made one with protocol 0)."""

from __future__ import annotations

import socket

from stepguard.serve import listen


def test_the_listening_socket_and_every_accepted_connection_have_tcp_nodelay() -> None:
    sock = listen("127.0.0.1", 0)
    try:
        assert sock.proto == socket.IPPROTO_TCP
        assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        sock.listen(1)
        client = socket.create_connection(sock.getsockname())
        conn, _ = sock.accept()
        try:
            assert conn.proto == socket.IPPROTO_TCP  # so asyncio's transport sets TCP_NODELAY as well
            assert conn.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        finally:
            conn.close()
            client.close()
    finally:
        sock.close()
