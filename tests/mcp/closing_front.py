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
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", target)
        last = [time.monotonic()]  # the connection's last traffic, either way

        async def pipe(src, dst, closes_idle):
            nonlocal closed
            try:
                while data := await src.read(65536):
                    if closes_idle and time.monotonic() - last[0] >= idle:
                        closed += 1
                        print(f"closed {closed}", file=sys.stderr, flush=True)
                        break
                    last[0] = time.monotonic()
                    dst.write(data)
                    await dst.drain()
            except ConnectionError:
                pass
            dst.close()  # one side ended: so does the other

        down = asyncio.create_task(pipe(up_reader, writer, False))
        await pipe(reader, up_writer, True)
        down.cancel()
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", listen)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]) if len(sys.argv) > 3 else 4.5))
