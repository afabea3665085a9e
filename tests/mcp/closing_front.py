"""A TCP front for an HTTP server that closes kept-alive connections the way servers do when
their keep-alive time runs out just as a client sends on one: a request arriving on a
connection idle for IDLE seconds or more gets the connection closed, unanswered.

Servers such as uvicorn and Node close idle connections after 5 s; a client reusing one at
that moment sees its request fail although the server is up. This front makes the moment
certain rather than a matter of timing.

    python closing_front.py LISTEN_PORT TARGET_PORT [IDLE]

Prints "closed N" on stderr each time it closes one.
"""

import asyncio
import sys
import time


async def main(listen, target, idle):
    closed = 0

    async def serve(reader, writer):
        nonlocal closed
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        last = time.monotonic()

        async def down():
            nonlocal last
            try:
                while data := await up_reader.read(65536):
                    last = time.monotonic()
                    writer.write(data)
                    await writer.drain()
            except ConnectionError:
                pass
            writer.close()

        pipe = asyncio.create_task(down())
        try:
            while data := await reader.read(65536):
                if time.monotonic() - last >= idle:
                    nonlocal_closed()
                    break
                last = time.monotonic()
                up_writer.write(data)
                await up_writer.drain()
        except ConnectionError:
            pass
        pipe.cancel()
        writer.close()
        up_writer.close()

    def nonlocal_closed():
        nonlocal closed
        closed += 1
        print(f"closed {closed}", file=sys.stderr, flush=True)

    server = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 4.5))
