/**
 * Push delivery through a webhook that fails 30% of attempts at random
 * (half with a 500, half with a reset connection): the fraction of tasks
 * whose final state reaches it, and the latency from the final state (the
 * status timestamp in the payload) to the webhook's 200 for it.
 *
 * `TASKS` non-blocking sends (`returnImmediately`), half of them ending
 * FAILED and half COMPLETED, each registering a push config with
 * `configuration.taskPushNotificationConfig`, arrive evenly spaced at
 * `RATE` a second. Ours is `A2AServer` with push on, 127.0.0.1 allowed, the
 * default timeout, attempts and budget (its first retry after about a
 * second, doubled each time). The anchor is the SDK's Express server with
 * its `DefaultPushNotificationSender`, which tries once.
 *
 *   npx tsx bench/push-delivery.ts
 *
 * Target: every final state delivered within the budget (ours 1.0); the
 * rest is informative.
 */
import { Duration, Effect, Scope } from "effect"
import * as Http from "node:http"
import { sdkPeer } from "../test/fixtures/peers.js"
import { webhook } from "../test/fixtures/webhook.js"
import { percentile, report, runMain } from "./report.js"
import { startOurs } from "./serverLoad.js"

const TASKS = Number(process.env.BENCH_PUSH_TASKS ?? 300)
const RATE = Number(process.env.BENCH_PUSH_RATE ?? 100)
const FAILURE = 0.3
const BUDGET = Duration.minutes(5)
const finalStates = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED"])

/** The final states a webhook answered 200, by task: their latency from the status timestamp. */
interface Series {
  readonly latencies: Map<string, number>
  /** Tasks whose final state was attempted at least once, whatever the answer. */
  readonly attempted: Set<string>
  attempts: number
}

/** The final status of a pushed body, either as a status update or as a whole task. */
const finalOf = (body: string): { readonly taskId: string; readonly timestamp: string } | undefined => {
  const parsed = JSON.parse(body)
  const update = parsed.statusUpdate
  const status = update?.status ?? parsed.task?.status
  if (!finalStates.has(status?.state)) return undefined
  return { taskId: update?.taskId ?? parsed.task?.id, timestamp: status.timestamp }
}

const hook = (series: Series) =>
  webhook((_, received, response) => {
    series.attempts++
    const final = finalOf(received.body)
    if (final !== undefined) series.attempted.add(final.taskId)
    const draw = Math.random()
    if (draw < FAILURE / 2) return response.writeHead(500).end()
    if (draw < FAILURE) return response.socket?.destroy()
    if (final !== undefined && !series.latencies.has(final.taskId)) {
      series.latencies.set(final.taskId, received.at - Date.parse(final.timestamp))
    }
    response.writeHead(200).end()
  })

const send = (rpcUrl: URL, agent: Http.Agent, text: string, hookUrl: string) =>
  new Promise<void>((resolve, reject) => {
    const body = JSON.stringify({
      jsonrpc: "2.0",
      id: 1,
      method: "SendMessage",
      params: {
        message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] },
        configuration: {
          returnImmediately: true,
          taskPushNotificationConfig: { url: hookUrl, token: crypto.randomUUID() }
        }
      }
    })
    Http.request(rpcUrl, {
      method: "POST",
      agent,
      headers: { "content-type": "application/json", "a2a-version": "1.0", "content-length": Buffer.byteLength(body) }
    }, (response) => {
      const chunks: Array<Buffer> = []
      response.on("data", (chunk: Buffer) => chunks.push(chunk)).on("end", () => {
        const answer = JSON.parse(Buffer.concat(chunks).toString("utf8"))
        if (answer.result?.task) resolve()
        else reject(new Error(`not a task: ${JSON.stringify(answer)}`))
      })
    }).on("error", reject).end(body)
  })

/** `TASKS` sends at `RATE` a second, every other one failing; then waits (bounded) until `done`. */
const run = (rpcUrl: string, series: Series, hookUrl: string, done: () => boolean, wait: Duration.Duration) =>
  Effect.promise(async () => {
    const agent = new Http.Agent({ keepAlive: true })
    const sent: Array<Promise<void>> = []
    const start = performance.now()
    for (let i = 0; i < TASKS; i++) {
      const due = start + (i * 1000) / RATE - performance.now()
      if (due > 0) await new Promise((resolve) => setTimeout(resolve, due))
      sent.push(send(new URL(rpcUrl), agent, i % 2 === 0 ? "fail" : "hello", hookUrl))
    }
    await Promise.all(sent)
    agent.destroy()
    const deadline = performance.now() + Duration.toMillis(wait)
    while (!done() && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50))
    return series
  })

const newSeries = (): Series => ({ latencies: new Map(), attempted: new Set(), attempts: 0 })

runMain(Effect.gen(function*() {
  const ours = newSeries()
  const ourHook = yield* hook(ours)
  const scope = yield* Scope.Scope
  const server = yield* Effect.promise(() =>
    startOurs(scope, { push: { allowPushTargets: ["127.0.0.1"], budget: BUDGET } })
  )
  // Within the budget, with slack for the last attempt's timeout.
  yield* run(
    server.rpcUrl,
    ours,
    ourHook.url,
    () => ours.latencies.size === TASKS,
    Duration.sum(BUDGET, Duration.seconds(15))
  )

  // The SDK's sender writes each delivery and each failure to the console: counted away, not printed.
  const theirs = newSeries()
  const theirHook = yield* hook(theirs)
  const console_ = { info: console.info, error: console.error }
  yield* Effect.acquireRelease(
    Effect.sync(() => {
      console.info = () => undefined
      console.error = () => undefined
    }),
    () => Effect.sync(() => Object.assign(console, console_))
  )
  const peer = yield* sdkPeer({ push: true })
  // It tries each final state once: done once each was attempted, and the last answer is in.
  yield* run(`${peer.url}/rpc`, theirs, theirHook.url, () => theirs.attempted.size === TASKS, Duration.seconds(30))
  yield* Effect.sleep("200 millis")

  const fraction = (series: Series) => series.latencies.size / TASKS
  const latency = (series: Series, p: number) => percentile([...series.latencies.values()], p)
  const setting = `${TASKS} tasks, webhook failing ${FAILURE * 100}% of attempts`
  report("push-delivery", [
    {
      name:
        `delivered fraction of final states, ${setting}: A2AServer vs SDK DefaultPushNotificationSender (tries once)`,
      ours: fraction(ours),
      peer: fraction(theirs),
      unit: "",
      target: "ours = 1.0",
      pass: fraction(ours) === 1
    },
    {
      name: "p50 latency from the final state to its delivery (the SDK's: of those delivered)",
      ours: latency(ours, 50),
      peer: latency(theirs, 50),
      unit: "ms",
      target: "informative",
      pass: true
    },
    {
      name: "p99 latency from the final state to its delivery (the SDK's: of those delivered)",
      ours: latency(ours, 99),
      peer: latency(theirs, 99),
      unit: "ms",
      target: "informative",
      pass: true
    },
    {
      name: "webhook attempts per task",
      ours: ours.attempts / TASKS,
      peer: theirs.attempts / TASKS,
      unit: "",
      target: "informative",
      pass: true
    }
  ])
}))
