/**
 * What an open breaker saves: the median cost of a call rejected by an open
 * breaker, against a call through a closed breaker around `Effect.void`, and
 * against waiting for the configured timeout of a blackholed remote (a TCP
 * server on 127.0.0.1 that accepts and never answers). One interleaved run.
 *
 *   npx tsx bench/circuit-breaker.ts
 */
import { Duration, Effect } from "effect"
import * as Net from "node:net"
import { A2AClientError } from "../src/A2AClientError.js"
import * as CircuitBreaker from "../src/CircuitBreaker.js"
import { report } from "./report.js"

const rounds = 15
const batch = 20_000
const timeout = Duration.millis(200)

const median = (values: ReadonlyArray<number>): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/** Nanoseconds per call, over one batch run in a single fiber. */
const perCall = (call: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const start = performance.now()
    for (let i = 0; i < batch; i++) yield* Effect.either(call)
    return ((performance.now() - start) * 1e6) / batch
  })

const blackhole = () =>
  new Promise<{ url: string; close: () => Promise<void> }>((resolve) => {
    const sockets = new Set<Net.Socket>()
    const server = Net.createServer((socket) => {
      sockets.add(socket)
      socket.on("close", () => sockets.delete(socket))
    })
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      resolve({
        url: `http://127.0.0.1:${port}/`,
        close: () =>
          new Promise((done) => {
            for (const socket of sockets) socket.destroy()
            server.close(() => done())
          })
      })
    })
  })

const main = Effect.gen(function*() {
  const hole = yield* Effect.promise(blackhole)
  const closed = yield* CircuitBreaker.make("bench-closed", { trip: CircuitBreaker.consecutiveFailures(1_000_000) })
  const open = yield* CircuitBreaker.make("bench-open", {
    trip: CircuitBreaker.consecutiveFailures(1),
    openDuration: "1 hour"
  })
  const failure = new A2AClientError({
    agent: "bench-open",
    operation: "SendMessage",
    reason: "ConnectionRefused",
    delivery: "NotSent",
    detail: "bench"
  })
  yield* Effect.either(open.protect(Effect.fail(failure)))
  if ((yield* open.state) !== "Open") return yield* Effect.dieMessage("the breaker did not open")

  // the call a closed breaker would keep making to a remote that never answers
  const hung = closed.protect(
    Effect.tryPromise({
      try: (signal) => fetch(hole.url, { method: "POST", body: "{}", signal }),
      catch: (cause) => cause
    }).pipe(Effect.timeoutFail({
      duration: timeout,
      onTimeout: () =>
        new A2AClientError({
          agent: "bench-closed",
          operation: "SendMessage",
          reason: "Timeout",
          delivery: "Unknown",
          detail: "no answer"
        })
    }))
  )

  // warm up
  yield* perCall(closed.protect(Effect.void))
  yield* perCall(open.protect(Effect.void))
  yield* Effect.either(hung)

  const closedNs: Array<number> = []
  const rejectedNs: Array<number> = []
  const hungNs: Array<number> = []
  for (let round = 0; round < rounds; round++) {
    closedNs.push(yield* perCall(closed.protect(Effect.void)))
    rejectedNs.push(yield* perCall(open.protect(Effect.void)))
    const start = performance.now()
    const result = yield* Effect.either(hung)
    hungNs.push((performance.now() - start) * 1e6)
    if (result._tag !== "Left") return yield* Effect.dieMessage("the blackholed remote answered")
  }
  yield* Effect.promise(hole.close)

  const rejected = median(rejectedNs)
  const closedCall = median(closedNs)
  const hungCall = median(hungNs)
  console.log(`rounds: ${rounds}, batch: ${batch} calls, blackhole timeout: ${Duration.format(timeout)}`)
  console.log(`rejected by an open breaker:          ${rejected.toFixed(0)} ns/call (median)`)
  console.log(`closed breaker around Effect.void:    ${closedCall.toFixed(0)} ns/call (median)`)
  console.log(`blackholed remote until its timeout:  ${(hungCall / 1e6).toFixed(1)} ms/call (median)`)
  console.log(`ratio rejected / closed:              ${(rejected / closedCall).toFixed(2)}`)
  console.log(`ratio rejected / blackholed timeout:  ${(rejected / hungCall).toExponential(2)}`)
  console.log(`blackholed timeout / rejected:        ${(hungCall / rejected).toFixed(0)}x`)
  report("circuit-breaker", [
    {
      name: "rejected (open) vs closed call around Effect.void",
      ours: rejected / 1000,
      peer: closedCall / 1000,
      unit: "µs",
      target: "informative",
      pass: true
    },
    {
      name: `rejected (open) vs a blackholed remote's ${Duration.format(timeout)} timeout`,
      ours: rejected / 1000,
      peer: hungCall / 1000,
      unit: "µs",
      target: "<< 1",
      pass: rejected < hungCall / 100
    }
  ])
})

Effect.runPromise(main).catch((error) => {
  console.error(error)
  process.exit(1)
})
