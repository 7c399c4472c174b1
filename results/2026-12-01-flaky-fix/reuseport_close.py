"""The flake's mechanism, without drainwatch: two listeners share 127.0.0.1:PORT through
SO_REUSEPORT (as the good-shutdown test's two replicas do); 40 dials complete their handshakes
into the two accept queues; listener A closes with its queue unaccepted. Prints how many dials
were reset and how many listener B accepted. Run inside a fresh network namespace (see README)."""
import errno
import socket

N = 40


def listener(port):
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind(("127.0.0.1", port))
    s.listen(128)
    return s


a = listener(0)
port = a.getsockname()[1]
b = listener(port)
clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(N)]
a.close()
b.setblocking(False)
accepted = []
while True:
    try:
        accepted.append(b.accept()[0])
    except BlockingIOError:
        break
reset = 0
for c in clients:
    c.settimeout(0.5)
    try:
        c.send(b"x")
        c.recv(1)
    except OSError as e:
        if e.errno == errno.ECONNRESET:
            reset += 1
    except socket.timeout:
        pass
print(f"tcp_migrate_req={open('/proc/sys/net/ipv4/tcp_migrate_req').read().strip()}: "
      f"{N} dials, {reset} reset when listener A closed, {len(accepted)} accepted by listener B")
