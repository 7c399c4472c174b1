import socket, struct, threading, time, sys
def serve(port, mode):
    s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR,1)
    s.bind(('127.0.0.1',port)); s.listen(1 if mode=='full' else 64)
    if mode=='full':
        # never accept: fill the accept queue (backlog 1) with three connections so that later SYNs are dropped
        keep=[socket.create_connection(('127.0.0.1',port)) for _ in range(3)]
        time.sleep(10**6)
    while True:
        c,_=s.accept()
        def h(c=c):
            c.recv(65536)
            if mode=='eof': c.close()
            elif mode=='rst':
                c.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack('ii',1,0)); c.close()
            elif mode=='ok':
                c.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok"); time.sleep(0.2); c.close()
        threading.Thread(target=h,daemon=True).start()
for port,mode in [(19101,'eof'),(19102,'rst'),(19104,'full'),(19105,'ok')]:
    threading.Thread(target=serve,args=(port,mode),daemon=True).start()
time.sleep(10**6)
