/**
 * The overhead of `RemoteAgent.send` over the raw `@a2a-js/sdk` client:
 * median latency of a blocking send to the same local SDK server, with the
 * same messages, the two interleaved in one run.
 *
 *   npx tsx bench/client-overhead.ts
 */
import { ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { Effect } from "effect"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { sdkPeer, sdkRequest } from "../test/fixtures/peers.js"
import { median, report } from "./report.js"

const rounds = Number(process.env.BENCH_ROUNDS ?? 20)
const perRound = Number(process.env.BENCH_CALLS ?? 50)

const program = Effect.gen(function*() {
  const peer = yield* sdkPeer()
  const agent = yield* RemoteAgent.make({ name: "bench", url: peer.url })
  const raw = yield* Effect.promise(() =>
    new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(peer.url)
  )
  const ours: Array<number> = []
  const theirs: Array<number> = []
  // Both run inside the same Effect program, as an Effect application calls them.
  const timed = <A, E>(effect: Effect.Effect<A, E>, into: Array<number>) =>
    Effect.suspend(() => {
      const start = performance.now()
      return Effect.tap(effect, () => Effect.sync(() => into.push(performance.now() - start)))
    })
  const runOurs = (i: number) => timed(agent.send(`complete ${i}`), ours)
  const runTheirs = (i: number) => timed(Effect.promise(() => raw.sendMessage(sdkRequest(`complete ${i}`))), theirs)
  // Warm both paths (JIT, keep-alive connections) before measuring.
  for (let i = 0; i < 200; i++) yield* Effect.zip(runOurs(i), runTheirs(i))
  ours.length = 0
  theirs.length = 0
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < perRound; i++) {
      if ((round + i) % 2 === 0) yield* Effect.zip(runOurs(i), runTheirs(i))
      else yield* Effect.zip(runTheirs(i), runOurs(i))
    }
  }
  return report("client-overhead", [
    {
      name: "RemoteAgent.send vs SDK Client.sendMessage (median ms)",
      ours: median(ours),
      peer: median(theirs),
      unit: "ms",
      target: "<= 1.10",
      pass: median(ours) / median(theirs) <= 1.1
    }
  ])
})

Effect.runPromise(Effect.scoped(program)).then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
