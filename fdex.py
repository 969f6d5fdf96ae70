import socket, sys, time, redis
port=int(sys.argv[1]); n=int(sys.argv[2])
socks=[]
for i in range(n):
    try: socks.append(socket.create_connection(("127.0.0.1",port),timeout=2))
    except Exception as e: print("connect",i,e); break
print("opened",len(socks))
time.sleep(1)
# one more connection should be refused or served
try:
    r=redis.Redis(port=port,socket_timeout=3)
    print("ping:",r.ping())
    print("set:",r.set("k","v"))
except Exception as e: print("new client:",repr(e))
# existing connection use
try:
    socks[0].sendall(b"*3\r\n$3\r\nSET\r\n$2\r\nk2\r\n$1\r\nv\r\n"); print("old conn set:",socks[0].recv(100))
except Exception as e: print("old:",e)
time.sleep(1)
for s in socks: s.close()
time.sleep(1)
r=redis.Redis(port=port,socket_timeout=3); print("after close ping:",r.ping())
