/**
 * Load shedding: the latency of the sends a server accepts when twice as
 * many arrive as it can serve, against the same at its capacity.
 *
 * The server (in its own process, so the load generator's work is not in its
 * figures) runs an agent that takes `AGENT_MS`, with `maxInFlight` set: its
 * capacity is `maxInFlight / AGENT_MS` sends a second. Sends arrive evenly
 * spaced (an open loop: an arrival does not wait for an answer) at that
 * rate, then at twice it, for `PHASE_SECONDS` each. Over the bound the
 * server answers 429 before anything runs; what it accepts should be served
 * as fast as at capacity.
 *
 *   npx tsx bench/overload.ts
 *
 * Target: p99 of accepted sends at 2× / p99 at 1× <= 1.5. The fraction shed
 * is reported beside it.
 */
import { Effect, Logger, LogLevel, Scope } from "effect"
import { fork } from "node:child_process"
import * as Http from "node:http"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import { percentile, report } from "./report.js"

const MAX_IN_FLIGHT = Number(process.env.BENCH_MAX_IN_FLIGHT ?? 20)
const AGENT_MS = Number(process.env.BENCH_AGENT_MS ?? 100)
const PHASE_SECONDS = Number(process.env.BENCH_PHASE_SECONDS ?? 5)
const capacity = (MAX_IN_FLIGHT * 1000) / AGENT_MS

const serve = async () => {
  const server = await Effect.runPromise(
    A2AServer.make({
      agent: () => Effect.as(Effect.sleep(AGENT_MS), AgentExecutor.completedText("done")),
      card: { name: "overload", description: "sleeps, then completes" },
      maxInFlight: MAX_IN_FLIGHT
    }).pipe(Scope.extend(Effect.runSync(Scope.make())), Logger.withMinimumLogLevel(LogLevel.Warning))
  )
  process.send!(server.rpcUrl)
}

interface Phase {
  readonly accepted: ReadonlyArray<number>
  readonly shed: number
  readonly other: number
}

const body = () =>
  JSON.stringify({
    jsonrpc: "2.0",
    id: 1,
    method: "SendMessage",
    params: { message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "go" }] } }
  })

/** `rate` sends a second for `seconds`, evenly spaced; each one's status and latency. */
const phase = (url: URL, agent: Http.Agent, rate: number, seconds: number) =>
  new Promise<Phase>((resolve) => {
    const accepted: Array<number> = []
    let shed = 0
    let other = 0
    let pending = 0
    const total = Math.round(rate * seconds)
    const start = performance.now()
    let sent = 0
    const settle = () => {
      if (--pending === 0 && sent === total) resolve({ accepted, shed, other })
    }
    const send = () => {
      const begun = performance.now()
      const text = body()
      pending++
      const request = Http.request(url, {
        method: "POST",
        agent,
        headers: { "content-type": "application/json", "a2a-version": "1.0", "content-length": Buffer.byteLength(text) }
      }, (response) => {
        response.resume().on("end", () => {
          if (response.statusCode === 200) accepted.push(performance.now() - begun)
          else if (response.statusCode === 429) shed++
          else other++
          settle()
        })
      })
      request.on("error", () => {
        other++
        settle()
      }).end(text)
    }
    // Catches up on the sends a late timer skipped, so the offered rate holds.
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1)
      while (sent < due) {
        sent++
        send()
      }
      if (sent < total) setTimeout(tick, Math.max(0, ((sent / rate) * 1000) - (performance.now() - start)))
    }
    tick()
  })

const main = async () => {
  const child = fork(import.meta.filename, ["serve"], { stdio: "inherit" })
  try {
    const url = new URL(
      await new Promise<string>((resolve, reject) => {
        child.once("message", (message) => resolve(String(message)))
        child.once("exit", (code) => reject(new Error(`the server exited (${code})`)))
      })
    )
    const agent = new Http.Agent({ keepAlive: true })
    // Warm both sides (JIT, connections) at half the capacity.
    await phase(url, agent, capacity / 2, 2)
    const atCapacity = await phase(url, agent, capacity, PHASE_SECONDS)
    const overloaded = await phase(url, agent, capacity * 2, PHASE_SECONDS)
    agent.destroy()
    const p99 = (p: Phase) => percentile(p.accepted, 99)
    const shedFraction = (p: Phase) => p.shed / (p.accepted.length + p.shed + p.other)
    const setting = `maxInFlight ${MAX_IN_FLIGHT}, agent ${AGENT_MS} ms, ${capacity}/s`
    report("overload", [
      {
        name: `p99 latency of accepted sends, offered 2× capacity vs 1× (${setting})`,
        ours: p99(overloaded),
        peer: p99(atCapacity),
        unit: "ms",
        target: "<= 1.5",
        pass: p99(overloaded) / p99(atCapacity) <= 1.5 && overloaded.other === 0 && atCapacity.other === 0
      },
      {
        name: "fraction of sends shed with 429, offered 2× capacity vs 1×",
        ours: shedFraction(overloaded),
        peer: shedFraction(atCapacity),
        unit: "",
        target: "informative",
        pass: true
      }
    ])
  } finally {
    child.kill()
  }
}
;(process.argv[2] === "serve" ? serve() : main()).catch((error) => {
  console.error(error)
  process.exit(1)
})
