import * as HttpApp from "@effect/platform/HttpApp"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, FastCheck, Option, Queue, type Scope } from "effect"
import * as Http from "node:http"
import * as PushReceiver from "../src/PushReceiver.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import { callerOn, keyOf, reasonOf, serve, taskOf, transports } from "./fixtures/callers.js"
import { leakAgent, type Secret, secretArbitrary } from "./fixtures/leakAgent.js"
import { captureLogs, eventually, userMessage } from "./fixtures/serverAgents.js"
import { webhook as recordingWebhook } from "./fixtures/webhook.js"

interface Delivery {
  readonly headers: Http.IncomingHttpHeaders
  readonly body: any
}

/** A webhook on 127.0.0.1 that records every delivery and answers 200. */
const webhook: Effect.Effect<{ readonly url: string; readonly deliveries: Array<Delivery> }, never, Scope.Scope> =
  Effect
    .acquireRelease(
      Effect.async<{ readonly url: string; readonly deliveries: Array<Delivery>; readonly server: Http.Server }>(
        (resume) => {
          const deliveries: Array<Delivery> = []
          const server = Http.createServer((request, response) => {
            const chunks: Array<Buffer> = []
            request.on("data", (chunk: Buffer) => chunks.push(chunk))
            request.on("end", () => {
              deliveries.push({ headers: request.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) })
              response.writeHead(200).end()
            })
          })
          server.listen(0, "127.0.0.1", () => {
            const address = server.address() as { port: number }
            resume(Effect.succeed({ url: `http://127.0.0.1:${address.port}/hook`, deliveries, server }))
          })
        }
      ),
      ({ server }) => Effect.sync(() => server.close())
    )

const stateOf = (delivery: Delivery): string | undefined =>
  delivery.body.statusUpdate?.status?.state ?? delivery.body.task?.status?.state

const textOfDelivery = (delivery: Delivery): string =>
  JSON.stringify(delivery.body.statusUpdate?.status?.message ?? delivery.body.task?.status?.message ?? {})

const config = (url: string, token: string) => ({
  tenant: "",
  id: "",
  taskId: "",
  url,
  token,
  authentication: undefined
})

describe("A2AServer with push notifications", () => {
  it.scopedLive("the card declares push; a task's events reach the webhook the SendMessage registered, FAILED opaque, on every transport", () =>
    Effect.gen(function*() {
      const hook = yield* webhook
      const { server } = yield* serve({ push: { allowPushTargets: ["127.0.0.1"] } })
      expect(server.card.capabilities?.pushNotifications).toBe(true)
      for (const transport of transports) {
        const a = yield* callerOn(server.url, transport, keyOf("a"))
        const token = `tok-${transport}-${crypto.randomUUID()}`
        const sent = yield* a.sendWith("fail", { taskPushNotificationConfig: config(hook.url, token) })
        const task = taskOf(sent)
        const final = yield* eventually(
          Effect.sync(() =>
            hook.deliveries.filter((d) =>
              d.headers["x-a2a-notification-token"] === token && stateOf(d) === "TASK_STATE_FAILED"
            )
          ),
          (found) => found.length > 0
        )
        expect(textOfDelivery(final[0]!)).toMatch(/Agent execution failed\. \(error_id: [0-9a-f]{12}\)/)
        expect(textOfDelivery(final[0]!)).not.toContain("hunter2")
        expect(final[0]!.headers["content-type"]).toBe("application/a2a+json")
        expect(JSON.stringify(final[0]!.body)).toContain(task.id)
      }
    }))

  it.scopedLive("a webhook on a private, link-local or loopback address is refused (-32602) before any connection, on every transport", () =>
    Effect.gen(function*() {
      const { runs, server } = yield* serve({ push: {} })
      for (const transport of transports) {
        const a = yield* callerOn(server.url, transport, keyOf("a"))
        for (
          const url of [
            "http://10.0.0.1/hook",
            "http://169.254.169.254/latest/meta-data",
            "http://[::1]:9/hook",
            "http://localhost:9/hook"
          ]
        ) {
          const refused = yield* a.sendWith("hello", { taskPushNotificationConfig: config(url, "t") })
          expect(reasonOf(refused), `${transport} ${url}`).toMatch(/INVALID_PARAMS|invalid/i)
        }
      }
      expect(runs).toEqual([])
    }))

  it.scopedLive("a webhook whose name does not resolve now is accepted at creation, on every transport: the delivery guard checks it", () =>
    Effect.gen(function*() {
      const { server } = yield* serve({ push: {} })
      for (const transport of transports) {
        const a = yield* callerOn(server.url, transport, keyOf("a"))
        const task = taskOf(yield* a.send("ask"))
        // The TCK registers `example.com`, which does not resolve where it runs; `.invalid` never does (RFC 6761).
        for (const url of ["https://example.com/a2a/push", "https://hooks.example.invalid/a2a/push"]) {
          const created = yield* Effect.promise(() =>
            a.client.createTaskPushNotificationConfig({ ...config(url, "tok"), taskId: task.id }, a.options)
          )
          expect(created.url, `${transport} ${url}`).toBe(url)
        }
        const sent = yield* a.sendWith("hello", {
          taskPushNotificationConfig: config("https://hooks.example.invalid/h", "t")
        })
        expect(taskOf(sent).id, transport).not.toBe("")
      }
    }))

  it.scopedLive("a streaming caller that leaves does not stop the pushes: the final state still reaches the webhook", () =>
    Effect.gen(function*() {
      const hook = yield* webhook
      const { server } = yield* serve({ push: { allowPushTargets: ["127.0.0.1"] } })
      for (const transport of transports) {
        const a = yield* callerOn(server.url, transport, keyOf("a"))
        const token = `tok-${crypto.randomUUID()}`
        const first = yield* Effect.promise(async () => {
          const events = a.client.sendMessageStream({
            tenant: "",
            message: userMessage("slow"),
            configuration: {
              acceptedOutputModes: [],
              taskPushNotificationConfig: config(hook.url, token),
              returnImmediately: false
            },
            metadata: {}
          }, a.options)
          const next = await events.next()
          // The caller leaves after the first event, long before the run ends.
          await events.return(undefined)
          return next.value
        })
        expect(first).toBeDefined()
        const final = yield* eventually(
          Effect.sync(() =>
            hook.deliveries.filter((d) =>
              d.headers["x-a2a-notification-token"] === token && stateOf(d) === "TASK_STATE_COMPLETED"
            )
          ),
          (found) => found.length > 0
        )
        expect(JSON.stringify(final[0]!.body)).toContain("done at last")
        // Each event once, in order: the final one last.
        const states = hook.deliveries.filter((d) => d.headers["x-a2a-notification-token"] === token).map(stateOf)
        expect(states[states.length - 1]).toBe("TASK_STATE_COMPLETED")
        expect(states.filter((state) => state === "TASK_STATE_COMPLETED")).toHaveLength(1)
      }
    }))

  it.scopedLive("configs made with the create call, on every transport, are their caller's own: another caller gets TaskNotFound", () =>
    Effect.gen(function*() {
      const hook = yield* webhook
      const { server } = yield* serve({ push: { allowPushTargets: ["127.0.0.1"] } })
      for (const transport of transports) {
        const a = yield* callerOn(server.url, transport, keyOf("a"))
        const b = yield* callerOn(server.url, transport, keyOf("b"))
        const task = taskOf(yield* a.send("ask"))
        const created = yield* Effect.promise(() =>
          a.client.createTaskPushNotificationConfig({ ...config(hook.url, "tok"), taskId: task.id }, a.options)
        )
        expect(created.id).not.toBe("")
        const listed = yield* Effect.promise(() =>
          a.client.listTaskPushNotificationConfig(
            { tenant: "", taskId: task.id, pageSize: 10, pageToken: "" },
            a.options
          )
        )
        expect(listed.configs.map((c) => c.id)).toEqual([created.id])
        const theirs = yield* Effect.promise(() =>
          b.client.listTaskPushNotificationConfig(
            { tenant: "", taskId: task.id, pageSize: 10, pageToken: "" },
            b.options
          )
            .then(() => "ok", (error: { reason?: string }) => error.reason)
        )
        expect(theirs, transport).toBe("TASK_NOT_FOUND")
        const refused = yield* Effect.promise(() =>
          a.client.createTaskPushNotificationConfig(
            { ...config("http://10.1.2.3/hook", "tok"), taskId: task.id },
            a.options
          )
            .then(() => "ok", (error: { reason?: string }) => error.reason)
        )
        expect(refused, transport).toBe("INVALID_PARAMS")
      }
    }))

  it.scopedLive("end to end: RemoteAgent.send with our PushReceiver gets a FAILED outcome pushed by our server, opaque, on every transport", () =>
    Effect.gen(function*() {
      const { server } = yield* serve({ push: { allowPushTargets: ["127.0.0.1"] }, authenticate: undefined })
      const receiver = yield* PushReceiver.serve()
      for (const transport of transports) {
        const agent = yield* RemoteAgent.make({
          name: `pushed-${transport}`,
          url: server.url,
          transports: [transport],
          timeout: "5 seconds"
        })
        const outcome = yield* agent.send("fail", { push: receiver })
        expect(outcome._tag, transport).toBe("Failed")
        expect(outcome.text).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
        expect(Option.isSome(yield* receiver.delivered(outcome.taskId))).toBe(true)
      }
    }))

  it.scopedLive("leak property: no secret of an agent's failure (typed, nested cause, defect, parse error) in any pushed byte, on every transport; the pushed FAILED text is the opaque one, and the log line with its error id has the secret", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      const secrets = new Map<string, Secret>()
      const hook = yield* recordingWebhook()
      const { server } = yield* serve({ agent: leakAgent(secrets), push: { allowPushTargets: ["127.0.0.1"] } })
      const callers = yield* Effect.forEach(transports, (transport) => callerOn(server.url, transport, keyOf("a")))
      for (const sample of FastCheck.sample(secretArbitrary, 12)) {
        for (const [i, caller] of callers.entries()) {
          const transport = transports[i]!
          const token = crypto.randomUUID()
          secrets.set(token, sample)
          const hookToken = `tok-${crypto.randomUUID()}`
          const task = taskOf(
            yield* caller.sendWith(token, { taskPushNotificationConfig: config(hook.url, hookToken) })
          )
          const ours = () => hook.received.filter((r) => r.headers["x-a2a-notification-token"] === hookToken)
          const failed = yield* eventually(
            Effect.sync(() =>
              ours().filter((r) => JSON.parse(r.body).statusUpdate?.status?.state === "TASK_STATE_FAILED")
            ),
            (found) => found.length > 0
          )
          for (const pushed of ours()) {
            expect(pushed.body, `${transport} ${sample.kind}`).not.toContain(sample.secret)
            expect(JSON.stringify(pushed.headers)).not.toContain(sample.secret)
          }
          const text: string = JSON.parse(failed[0]!.body).statusUpdate.status.message.parts[0].text
          const errorId = /^Agent execution failed\. \(error_id: ([0-9a-f]{12})\)$/.exec(text)?.[1]
          expect(errorId, `${transport} ${sample.kind}: ${text}`).toBeDefined()
          // The same failure as the caller's own answer: one error id for both channels.
          expect(JSON.stringify(task.status?.message)).toContain(errorId)
          const line = logs.lines.find((l) => l.annotations.errorId === errorId)
          expect(line?.annotations.taskId).toBe(task.id)
          expect(String(line?.annotations.cause)).toContain(sample.secret)
        }
      }
    }).pipe(Effect.provide(logs.layer))
  })

  it.scopedLive(
    "a webhook that fails its first deliveries (a 500, a reset, a timeout) still gets the FAILED: our PushReceiver behind it yields it once",
    () =>
      Effect.gen(function*() {
        // Set once the receiver exists: the front comes first, since the receiver is made with its URL.
        let handler: ((request: Request) => Promise<Response>) | undefined = undefined
        const front = yield* failingFront((request) => handler!(request))
        const receiver = yield* PushReceiver.make({ url: front.url })
        handler = HttpApp.toWebHandler(receiver.app)
        const events = yield* receiver.subscribe
        const { server } = yield* serve({
          push: { allowPushTargets: ["127.0.0.1"], timeout: "300 millis", backoff: "50 millis" },
          authenticate: undefined
        })
        const agent = yield* RemoteAgent.make({ name: "flaky-webhook", url: server.url, timeout: "30 seconds" })
        const outcome = yield* agent.send("fail", { push: receiver })
        expect(outcome._tag).toBe("Failed")
        expect(outcome.text).toMatch(/^Agent execution failed\. \(error_id: [0-9a-f]{12}\)$/)
        // Three attempts failed before any got through, and the final state came once.
        expect(front.answers.slice(0, 3)).toEqual([500, "reset", "timeout"])
        // The first retry came after the configured backoff (50 ms, jittered), not the default second.
        const firstRetry = front.received[1]!.at - front.received[0]!.at
        expect(firstRetry).toBeGreaterThanOrEqual(35)
        expect(firstRetry).toBeLessThan(700)
        const seen = Chunk.toReadonlyArray(yield* Queue.takeAll(events))
        expect(seen.filter((event) => event._tag === "Finished" && event.outcome.taskId === outcome.taskId))
          .toHaveLength(1)
      }),
    40_000
  )
})

/** A webhook whose first three deliveries fail (a 500, a reset, no answer at all) and whose others go to `forward`. */
const failingFront = (forward: (request: Request) => Promise<Response>) =>
  Effect.gen(function*() {
    const answers: Array<number | "reset" | "timeout"> = []
    const hook = yield* recordingWebhook((index, received, response) => {
      if (index === 0) {
        answers.push(500)
        return void response.writeHead(500).end()
      }
      if (index === 1) {
        answers.push("reset")
        return void response.socket?.destroy()
      }
      if (index === 2) return void answers.push("timeout")
      const headers = Object.entries(received.headers).flatMap(([name, value]) =>
        typeof value === "string" ? [[name, value] as [string, string]] : []
      )
      void forward(new Request(`http://127.0.0.1${received.url}`, { method: "POST", headers, body: received.body }))
        .then(
          (answer) => {
            answers.push(answer.status)
            response.writeHead(answer.status).end()
          },
          () => response.writeHead(500).end()
        )
    })
    return { url: hook.url, answers, received: hook.received }
  })
