/**
 * Three replicas in processes of their own, on one throwaway PostgreSQL,
 * behind a round-robin TCP proxy on 127.0.0.1, act as one server: a
 * subscriber on any replica streams a run on any other, a cut stream
 * resumes on another replica with nothing lost or repeated, a cancel on one
 * replica stops a run on another, concurrent messages to one task run it
 * once, and a replica killed mid-run leaves its task FAILED (interrupted)
 * for every subscriber. The callers are the SDK's raw clients.
 */
import { AgentCard, type StreamResponse, type Task, TaskState } from "@a2a-js/sdk"
import { type Client, ClientFactory, JsonRpcTransportFactory } from "@a2a-js/sdk/client"
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, FastCheck, Stream } from "effect"
import * as EventId from "../src/internal/wire/eventId.js"
import * as RemoteAgent from "../src/RemoteAgent.js"
import * as Cluster from "./fixtures/cluster.js"
import { databaseUrl } from "./fixtures/databaseUrl.js"
import { userMessage } from "./fixtures/serverAgents.js"

/** A raw SDK client of one replica itself, not of the proxy its card names. */
const clientAt = (replicaUrl: string, proxyUrl: string): Promise<Client> =>
  fetch(`${replicaUrl}/.well-known/agent-card.json`, { headers: { "a2a-version": "1.0" } })
    .then((response) => response.json())
    .then((json) => {
      const card = AgentCard.fromJSON(json)
      const own = {
        ...card,
        supportedInterfaces: card.supportedInterfaces.map((face) => ({
          ...face,
          url: face.url.replace(proxyUrl, replicaUrl)
        }))
      }
      return new ClientFactory({ transports: [new JsonRpcTransportFactory()] }).createFromAgentCard(own)
    })

const request = (text: string, returnImmediately = false, taskId = "") => ({
  tenant: "",
  message: userMessage(text, { taskId }),
  configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
  metadata: {}
})

const collect = async (events: AsyncGenerator<StreamResponse>, limit = 200): Promise<Array<StreamResponse>> => {
  const seen: Array<StreamResponse> = []
  for await (const event of events) {
    seen.push(event)
    if (seen.length >= limit) break
  }
  return seen
}

const numberOf = (event: StreamResponse): number => {
  const seq = EventId.sequenceOf(event)
  if (seq === undefined) throw new Error(`no number on ${JSON.stringify(event)}`)
  return seq
}

const stateOf = (event: StreamResponse | undefined): TaskState | undefined =>
  event?.payload?.$case === "statusUpdate"
    ? event.payload.value.status?.state
    : event?.payload?.$case === "task"
    ? event.payload.value.status?.state
    : undefined

/** A client of each replica, the cluster's proxy and the replicas. */
const cluster = Effect.gen(function*() {
  const { proxy, replicas } = yield* Cluster.start(databaseUrl())
  const clients = yield* Effect.promise(() => Promise.all(replicas.map((replica) => clientAt(replica.url, proxy.url))))
  return { proxy, replicas, clients }
})

/** `effect`, retried every 100 ms until it holds, for at most `millis`. */
const eventually = <A>(millis: number, check: () => Promise<A>): Effect.Effect<A> =>
  Effect.promise(async () => {
    const deadline = Date.now() + millis
    for (;;) {
      try {
        return await check()
      } catch (error) {
        if (Date.now() > deadline) throw error
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
    }
  })

describe("three replicas on one PostgreSQL", () => {
  it.scopedLive(
    "a subscriber on C streams a run on A; a stream cut on A resumes on B or C with nothing lost or repeated",
    () =>
      Effect.gen(function*() {
        const { clients } = yield* cluster
        const [a, b, c] = clients as [Client, Client, Client]

        // SubscribeToTask on C to a run on A: the Task, then every later event, until it ends.
        const stream = a.sendMessageStream(request("steps 4 150"))
        const first = (yield* Effect.promise(() => stream.next())).value as StreamResponse
        const taskId = (first.payload!.value as Task).id
        const onC = yield* Effect.promise(() => collect(c.resubscribeTask({ id: taskId, tenant: "" })))
        const onA = [first, ...(yield* Effect.promise(() => collect(stream)))]
        expect(onC[0]?.payload?.$case).toBe("task")
        expect(stateOf(onC.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED)
        const from = numberOf(onC[0]!)
        expect(onC.slice(1).map(numberOf)).toEqual(onA.map(numberOf).filter((seq) => seq > from))
        expect(onA.map(numberOf)).toEqual(onA.map((_, i) => i + 1))

        // Resume property: a stream started on A, cut after k events, resumed on B or C.
        yield* Effect.promise(() =>
          FastCheck.assert(
            FastCheck.asyncProperty(FastCheck.integer({ min: 1, max: 6 }), FastCheck.boolean(), async (k, onB) => {
              const cut = a.sendMessageStream(request("steps 5 40"))
              const seen: Array<StreamResponse> = []
              for await (const event of cut) {
                seen.push(event)
                if (seen.length >= k) break
              }
              const id = (seen[0]!.payload!.value as Task).id
              const rest = await collect(
                (onB ? b : c).resubscribeTask({ id, tenant: "" }, {
                  serviceParameters: { "Last-Event-ID": String(numberOf(seen.at(-1)!)) }
                })
              )
              const joined = [...seen, ...rest]
              expect(joined.map(numberOf)).toEqual(joined.map((_, i) => i + 1))
              expect(stateOf(joined.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED)
              // The whole log, read from its start on the third replica, is what the caller saw.
              const whole = await collect(
                c.resubscribeTask({ id, tenant: "" }, { serviceParameters: { "Last-Event-ID": "0" } })
              )
              expect(whole.map((event) => JSON.stringify(event.payload?.$case === "task" ? "task" : event))).toEqual(
                joined.map((event) => JSON.stringify(event.payload?.$case === "task" ? "task" : event))
              )
            }),
            { numRuns: 12 }
          )
        )
      }),
    120_000
  )

  it.scopedLive(
    "our client, through the round-robin proxy, resumes a stream cut mid-run on the next replica in turn: every event once, in order",
    () =>
      Effect.gen(function*() {
        const { proxy } = yield* cluster
        const agent = yield* RemoteAgent.make({ name: "cluster", url: proxy.url, timeout: "10 seconds" })
        let seen = 0
        const events = yield* agent.stream("steps 5 150").pipe(
          Stream.tap(() => Effect.sync(() => ++seen === 3 && proxy.cut())),
          Stream.runCollect
        )
        const shapes = Chunk.toArray(events).map((event) =>
          event._tag === "Status" ? event.text : event._tag === "Finished" ? event.outcome._tag : event._tag
        )
        expect(shapes).toEqual(["", "step 1", "step 2", "step 3", "step 4", "step 5", "Completed"])
        // The stream went through the proxy to one replica, and its resumption to the next.
        expect(proxy.sent()).toMatch(/last-event-id: 3/i)
      }),
    60_000
  )

  it.scopedLive(
    "a streaming repeat of a running key on B follows the run on A event by event, not only its end",
    () =>
      Effect.gen(function*() {
        const { clients } = yield* cluster
        const [a, b] = clients as [Client, Client]
        const key = { serviceParameters: { "Idempotency-Key": crypto.randomUUID() } }
        const message = request("steps 4 200")
        const onA = a.sendMessageStream(message, key)
        const first = (yield* Effect.promise(() => onA.next())).value as StreamResponse
        const onB = yield* Effect.promise(() => collect(b.sendMessageStream(message, key)))
        const rest = yield* Effect.promise(() => collect(onA))
        expect(onB[0]?.payload?.$case).toBe("task")
        expect((onB[0]!.payload!.value as Task).id).toBe((first.payload!.value as Task).id)
        const steps = onB.filter((event) =>
          event.payload?.$case === "statusUpdate" && stateOf(event) === TaskState.TASK_STATE_WORKING
        )
        expect(steps.length).toBeGreaterThanOrEqual(2)
        expect(stateOf(onB.at(-1))).toBe(TaskState.TASK_STATE_COMPLETED)
        // One run: A's stream and B's end on the same numbered event.
        expect(numberOf(onB.at(-1)!)).toBe(numberOf(rest.at(-1)!))
      }),
    60_000
  )

  it.scopedLive(
    "a cancel on B stops a run on A through a nudge, not the store poll; a subscriber on C gets CANCELED",
    () =>
      Effect.gen(function*() {
        const { clients } = yield* cluster
        const [a, b, c] = clients as [Client, Client, Client]
        const lags: Array<number> = []
        for (let i = 0; i < 3; i++) {
          const task = (yield* Effect.promise(() => a.sendMessage(request("wait", true)))) as Task
          const subscription = c.resubscribeTask({ id: task.id, tenant: "" })
          const head = (yield* Effect.promise(() => subscription.next())).value as StreamResponse
          expect(head.payload?.$case).toBe("task")
          const canceled = yield* Effect.promise(() => b.cancelTask({ id: task.id, tenant: "", metadata: {} }))
          const answered = Date.now()
          expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED)
          const rest = yield* Effect.promise(() => collect(subscription))
          lags.push(Date.now() - answered)
          expect(stateOf(rest.at(-1))).toBe(TaskState.TASK_STATE_CANCELED)
          // The run on A is over: a message to the task is refused as ended, not as still running.
          const again = yield* Effect.promise(() =>
            a.sendMessage(request("more", false, task.id)).then(() => "ran", (error: unknown) => String(error))
          )
          expect(again).not.toMatch(/still running/)
        }
        // The store poll that would otherwise stop the run looks every second, a run it has watched for half of one:
        // three stops in a row each well under that come from the nudge.
        expect([...lags].sort((x, y) => x - y)[1]).toBeLessThan(400)
      }),
    60_000
  )

  it.scopedLive(
    "concurrent messages to one paused task on all three replicas run it once",
    () =>
      Effect.gen(function*() {
        const { clients } = yield* cluster
        const paused = (yield* Effect.promise(() => clients[0]!.sendMessage(request("ask")))) as Task
        expect(paused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED)
        const answers = yield* Effect.promise(() =>
          Promise.all(clients.map((client) =>
            client.sendMessage(request("steps 3 100", false, paused.id)).then(
              (task) => `ran ${(task as Task).status?.state}`,
              (error: unknown) => String(error)
            )
          ))
        )
        expect(answers.filter((answer) => answer === `ran ${TaskState.TASK_STATE_COMPLETED}`)).toHaveLength(1)
        expect(answers.filter((answer) => /still running/.test(answer))).toHaveLength(2)
      }),
    60_000
  )

  it.scopedLive(
    "a replica killed mid-run leaves its task FAILED (interrupted) within lease and sweep, seen by the others' subscribers",
    () =>
      Effect.gen(function*() {
        const { clients, replicas } = yield* cluster
        const task = (yield* Effect.promise(() => clients[0]!.sendMessage(request("wait", true)))) as Task
        const subscription = clients[1]!.resubscribeTask({ id: task.id, tenant: "" })
        yield* Effect.promise(() => subscription.next())
        const killed = Date.now()
        replicas[0]!.kill()
        const rest = yield* Effect.promise(() => collect(subscription))
        const end = rest.at(-1)
        expect(stateOf(end)).toBe(TaskState.TASK_STATE_FAILED)
        // Lease 2 s, sweep every 0.3 s (see replicaChild.ts), and some slack for a loaded machine.
        expect(Date.now() - killed).toBeLessThan(8_000)
        const text = JSON.stringify(end)
        expect(text).toMatch(/Agent execution failed\. \(error_id: [0-9a-f]{12}\)/)
        const stored = yield* eventually(5_000, () =>
          clients[2]!.getTask({ id: task.id, tenant: "", historyLength: undefined }))
        expect(stored.status?.state).toBe(TaskState.TASK_STATE_FAILED)
      }),
    60_000
  )
})
