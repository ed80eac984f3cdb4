/**
 * A TCP proxy on 127.0.0.1 in front of a server, able to cut every open
 * connection or stop listening: from the caller's side, a service dying
 * during a call, or being down.
 */
import * as Effect from "effect/Effect"
import * as net from "node:net"

export interface TcpProxy {
  readonly url: string
  /** Destroys every open connection (a crash mid-call). */
  readonly cutAll: Effect.Effect<void>
  /** Cuts every connection and stops listening (the service is down). */
  readonly stop: Effect.Effect<void>
}

/** `target` is read per connection, so the proxy can start before the server it fronts. */
export const make = (target: () => { readonly host: string; readonly port: number }) =>
  Effect.acquireRelease(
    Effect.async<{ proxy: TcpProxy; server: net.Server; sockets: Set<net.Socket> }>((resume) => {
      const sockets = new Set<net.Socket>()
      const track = (socket: net.Socket) => {
        sockets.add(socket)
        socket.on("close", () => sockets.delete(socket))
        socket.on("error", () => socket.destroy())
      }
      const server = net.createServer((client) => {
        const { host, port } = target()
        const upstream = net.connect(port, host)
        track(client)
        track(upstream)
        client.pipe(upstream)
        upstream.pipe(client)
        client.on("close", () => upstream.destroy())
        upstream.on("close", () => client.destroy())
      })
      const cutAll = Effect.sync(() => {
        for (const socket of sockets) socket.resetAndDestroy()
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as net.AddressInfo
        resume(Effect.succeed({
          server,
          sockets,
          proxy: {
            url: `http://127.0.0.1:${port}`,
            cutAll,
            stop: Effect.zipRight(
              cutAll,
              Effect.async<void>((done) => {
                server.close(() => done(Effect.void))
              })
            )
          }
        }))
      })
    }),
    ({ proxy, server }) => server.listening ? proxy.stop : Effect.void
  ).pipe(Effect.map(({ proxy }) => proxy))
