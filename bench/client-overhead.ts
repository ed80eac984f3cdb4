/**
 * The overhead of `RemoteAgent.send` over the raw `@a2a-js/sdk` client on
 * each transport: median latency of a blocking send to the same local SDK
 * server (Express `jsonRpcHandler` and `restHandler`, `grpcService` on
 * grpc-js, around one agent), with the same messages, the raw client built
 * with that transport's factory alone, all interleaved in one run, in a
 * new order for each message; and the same on JSON-RPC through
 * `FetchHttpClient` (an `HttpClient` in context), as its own row.
 *
 *   npx tsx bench/client-overhead.ts
 */
import { ClientFactory, JsonRpcTransportFactory, RestTransportFactory, type TransportFactory } from "@a2a-js/sdk/client"
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc"
import { FetchHttpClient } from "@effect/platform"
import { Effect } from "effect"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { sdkRequest } from "../test/fixtures/peers.js"
import { sdkPeers } from "../test/fixtures/transportPeers.js"
import { median, report, runMain } from "./report.js"

const rounds = Number(process.env.BENCH_ROUNDS ?? 20)
const perRound = Number(process.env.BENCH_CALLS ?? 50)

const transports: ReadonlyArray<
  { readonly transport: RemoteAgent.Transport; readonly label: string; readonly factory: TransportFactory }
> = [
  { transport: "JSONRPC", label: "", factory: new JsonRpcTransportFactory() },
  { transport: "HTTP+JSON", label: " over HTTP+JSON", factory: new RestTransportFactory() },
  { transport: "GRPC", label: " over gRPC", factory: new GrpcTransportFactory() }
]

type Run = (i: number) => Effect.Effect<unknown, unknown>

const program = Effect.gen(function*() {
  const peer = yield* sdkPeers(transports.map(({ transport }) => transport))
  // Both run inside the same Effect program, as an Effect application calls them.
  const timed = <A, E>(effect: Effect.Effect<A, E>, into: Array<number>) =>
    Effect.suspend(() => {
      const start = performance.now()
      return Effect.tap(effect, () => Effect.sync(() => into.push(performance.now() - start)))
    })
  const pairs = yield* Effect.forEach(transports, ({ factory, label, transport }) =>
    Effect.gen(function*() {
      const agent = yield* RemoteAgent.make({ name: "bench", url: peer.url, transports: [transport] })
      const raw = yield* Effect.promise(() => new ClientFactory({ transports: [factory] }).createFromUrl(peer.url))
      const ours: Array<number> = []
      const theirs: Array<number> = []
      const runs: ReadonlyArray<Run> = [
        (i: number) => timed(agent.send(`complete ${i}`), ours),
        (i: number) => timed(Effect.promise(() => raw.sendMessage(sdkRequest(`complete ${i}`))), theirs)
      ]
      return { label, ours, theirs, runs }
    }))
  const viaHttpClient = yield* Effect.provide(
    RemoteAgent.make({ name: "bench-http-client", url: peer.url, transports: ["JSONRPC"] }),
    FetchHttpClient.layer
  )
  const throughClient: Array<number> = []
  const runs: ReadonlyArray<Run> = [
    ...pairs.flatMap((pair) => pair.runs),
    (i: number) => timed(viaHttpClient.send(`complete ${i}`), throughClient)
  ]
  const all = [...pairs.flatMap((pair) => [pair.ours, pair.theirs]), throughClient]
  // Warm every path (JIT, keep-alive connections and channels) before measuring.
  for (let i = 0; i < 200; i++) yield* Effect.forEach(runs, (run) => run(i), { discard: true })
  for (const times of all) times.length = 0
  // In a new order for each message (the same orders in every run): a call leaves work behind (a connection's
  // bookkeeping, garbage) to whichever runs next, and a rotation would keep the same neighbours; a connection just
  // used also answers sooner. Load from elsewhere on the machine spreads over all of them.
  let seed = 1
  const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647
  const order = runs.map((_, i) => i)
  for (let call = 0; call < rounds * perRound; call++) {
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1))
      ;[order[i], order[j]] = [order[j]!, order[i]!]
    }
    yield* Effect.forEach(order, (index) => runs[index]!(call), { discard: true })
  }
  const jsonRpc = pairs[0]!
  return report("client-overhead", [
    ...pairs.map(({ label, ours, theirs }) => ({
      name: `RemoteAgent.send vs SDK Client.sendMessage${label} (median ms)`,
      ours: median(ours),
      peer: median(theirs),
      unit: "ms",
      target: "<= 1.10",
      pass: median(ours) / median(theirs) <= 1.1
    })),
    {
      name: "RemoteAgent.send through FetchHttpClient vs SDK Client.sendMessage (median ms)",
      ours: median(throughClient),
      peer: median(jsonRpc.theirs),
      unit: "ms",
      // The cost of the user's HttpClient is theirs to choose: shown, not held to a bound.
      target: "informative",
      pass: true
    }
  ])
})

runMain(program)
