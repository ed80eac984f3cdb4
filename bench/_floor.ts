import { ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { Effect, Option } from "effect"
import * as convert from "../src/internal/convert.js"
import * as tracing from "../src/internal/tracing.js"
import { makeTrackingFetch } from "../src/internal/transport.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { sdkPeer, sdkRequest } from "../test/fixtures/peers.js"
import { median } from "./report.js"
const V = process.env.V ?? "floor"
const program = Effect.gen(function*() {
  const peer = yield* sdkPeer()
  const agent = yield* RemoteAgent.make({ name: "bench", url: peer.url })
  const raw = yield* Effect.promise(() => new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromUrl(peer.url))
  const tf = makeTrackingFetch(10_000_000, {})
  const tracked = yield* Effect.promise(() => new ClientFactory({ transports: [new JsonRpcTransportFactory({ fetchImpl: tf.fetch, legacyCompat: { enabled: true } })] }).createFromUrl(peer.url))
  const ours: Array<number> = [], theirs: Array<number> = []
  const timed = <A, E>(effect: Effect.Effect<A, E>, into: Array<number>) => Effect.suspend(() => { const start = performance.now(); return Effect.tap(effect, () => Effect.sync(() => into.push(performance.now() - start))) })
  const floor = (i: number) => Effect.async<unknown>((resume) => {
    const c = new AbortController(); tf.track(c.signal); const t = setTimeout(() => c.abort(), 30000)
    const tp = V === "ids" ? tracing.traceparent(tracing.childIds(Option.none())) : "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    tracked.sendMessage({ tenant: "", message: convert.userMessage([convert.textSdkPart(`complete ${i}`)], undefined, undefined, undefined), configuration: undefined, metadata: undefined }, { signal: c.signal, serviceParameters: { traceparent: tp } }).then((r: any) => { clearTimeout(t); resume(Effect.succeed(convert.taskOutcome("bench", r.task ?? r))) })
    return Effect.sync(() => c.abort())
  })
  const runOurs = (i: number) => timed(V === "ours" ? agent.send(`complete ${i}`) : V === "fr" ? Effect.withFiberRuntime(() => floor(i)) : floor(i), ours)
  const runTheirs = (i: number) => timed(Effect.promise(() => raw.sendMessage(sdkRequest(`complete ${i}`))), theirs)
  for (let i = 0; i < 200; i++) yield* Effect.zip(runOurs(i), runTheirs(i))
  ours.length = 0; theirs.length = 0
  for (let round = 0; round < 20; round++) for (let i = 0; i < 50; i++) { if ((round + i) % 2 === 0) yield* Effect.zip(runOurs(i), runTheirs(i)); else yield* Effect.zip(runTheirs(i), runOurs(i)) }
  console.log(V.padEnd(6), "ratio", (median(ours) / median(theirs)).toFixed(3), "raw", median(theirs).toFixed(3))
})
Effect.runPromise(Effect.scoped(program)).then(() => process.exit(0), (e) => { console.error(e); process.exit(1) })
