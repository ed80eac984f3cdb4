/**
 * The request handler's run stages: started in order before a run, each
 * event handed to them once the store has it and before the caller's
 * stream, ended in reverse once the run's last event is stored; a stage
 * that fails to start refuses the run, the request failing with its error.
 */
import { type SendMessageRequest, type StreamResponse, TaskState } from "@a2a-js/sdk"
import { ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Stream } from "effect"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as internalChannel from "../../../../src/internal/server/handler/channel.js"
import * as internalRequestHandler from "../../../../src/internal/server/handler/requestHandler.js"
import type * as internalRunStages from "../../../../src/internal/server/handler/runStages.js"
import * as memoryStore from "../../../../src/internal/server/store/memoryStore.js"
import * as internalStore from "../../../../src/internal/server/store/store.js"
import { cardFor } from "../../../fixtures/peers.js"
import { userMessage } from "../../../fixtures/serverAgents.js"

const context = new ServerCallContext({ user: new UnauthenticatedUser() })

const card = { ...cardFor("http://127.0.0.1/unused"), supportedInterfaces: [] }

const request = (text: string): SendMessageRequest => ({
  tenant: "",
  message: userMessage(text),
  configuration: undefined,
  metadata: undefined
})

// Three statuses, then COMPLETED; each run counted.
const stepsAgent = (runs: { count: number }): AgentExecutor.Agent => () =>
  Effect.gen(function*() {
    runs.count++
    for (let i = 1; i <= 3; i++) yield* AgentExecutor.status(`step ${i}`)
    return AgentExecutor.completedText("done")
  })

const stateOf = (response: StreamResponse): string => {
  const payload = response.payload
  return payload?.$case === "statusUpdate"
    ? `status ${payload.value.status?.state}`
    : payload?.$case === "task"
    ? "task"
    : String(payload?.$case)
}

/** Our request handler over a memory store, with `runStages`, each new task named `taskId`. */
const handlerWith = (runStages: ReadonlyArray<internalRunStages.RunStage>, taskId: string, runs: { count: number }) =>
  Effect.gen(function*() {
    const store = memoryStore.make({ now: () => Date.now() })
    const channels = internalChannel.makeChannels()
    const handler = yield* internalRequestHandler.make({
      card,
      extendedCard: undefined,
      executor: yield* AgentExecutor.make(stepsAgent(runs)),
      channels,
      pushStore: undefined,
      runStages,
      taskIdFor: () => taskId
    }).pipe(Effect.provideService(internalStore.TaskStore, store))
    return { handler, store, channels }
  })

describe("run stages", () => {
  it.scopedLive("each event reaches the stages once stored and before the caller; they end in reverse once the end is stored", () =>
    Effect.gen(function*() {
      const seen: Array<string> = []
      const runs = { count: 0 }
      const taskId = "staged-1"
      const storeRef: { store?: internalStore.TaskStore } = {}
      // The task as the store holds it now (the memory store answers at once).
      const stored = () => Effect.runSync(Effect.orDie(storeRef.store!.get(taskId, context)))
      const stage = (name: string): internalRunStages.RunStage => ({
        start: ({ requestContext }) =>
          Effect.sync(() => {
            seen.push(`${name} start ${requestContext.taskId} runs=${runs.count}`)
            return {
              event: (event) => {
                if (name !== "a") return
                const task = stored()
                // A status of a batch stored at once is in the history, the batch's last one the task's status.
                const has = event.kind === "statusUpdate"
                  ? [task?.status?.message, ...(task?.history ?? [])].some((message) =>
                    message?.messageId === event.data.status?.message?.messageId
                  )
                  : task !== undefined
                seen.push(`stage ${event.kind === "statusUpdate" ? `status ${event.data.status?.state}` : event.kind}`)
                if (!has) seen.push(`not stored yet: ${event.kind}`)
              },
              end: Effect.sync(() => seen.push(`${name} end, stored ${stored()?.status?.state}`))
            }
          })
      })
      const { handler, store } = yield* handlerWith([stage("a"), stage("b")], taskId, runs)
      storeRef.store = store
      yield* handler.sendMessageStream(request("go"), context).pipe(
        Stream.runForEach((response) => Effect.sync(() => seen.push(`caller ${stateOf(response)}`)))
      )
      // The ends run once the stream's last event is out: waited for, briefly.
      for (let i = 0; i < 100 && !seen.some((line) => line.startsWith("a end")); i++) yield* Effect.sleep("10 millis")
      const working = `status ${TaskState.TASK_STATE_WORKING}`
      const completed = `status ${TaskState.TASK_STATE_COMPLETED}`
      const events = ["task", working, working, working, completed]
      expect(seen.slice(0, 2)).toEqual([`a start ${taskId} runs=0`, `b start ${taskId} runs=0`])
      expect(seen.filter((line) => line.startsWith("stage "))).toEqual(events.map((event) => `stage ${event}`))
      expect(seen.filter((line) => line.startsWith("caller "))).toEqual(events.map((event) => `caller ${event}`))
      expect(seen.filter((line) => line.startsWith("not stored"))).toEqual([])
      // The k-th event reached the stage before the caller.
      const at = (prefix: string) => seen.flatMap((line, i) => line.startsWith(prefix) ? [i] : [])
      const caller = at("caller ")
      at("stage ").forEach((i, k) => expect(i).toBeLessThan(caller[k]!))
      expect(seen.slice(-2)).toEqual([
        `b end, stored ${TaskState.TASK_STATE_COMPLETED}`,
        `a end, stored ${TaskState.TASK_STATE_COMPLETED}`
      ])
    }))

  it.scopedLive("a stage that fails to start refuses the run: the request fails with its error, those started end, nothing is stored", () =>
    Effect.gen(function*() {
      const runs = { count: 0 }
      const ended: Array<string> = []
      const taskId = "refused-1"
      const { channels, handler, store } = yield* handlerWith(
        [
          { start: () => Effect.succeed({ end: Effect.sync(() => ended.push("first")) }) },
          { start: () => Effect.fail(new Error("the log is out of reach")) },
          { start: () => Effect.succeed({ end: Effect.sync(() => ended.push("never started")) }) }
        ],
        taskId,
        runs
      )
      const sent = yield* Effect.exit(handler.sendMessage(request("go"), context))
      expect(Exit.isFailure(sent) && String(Cause.squash(sent.cause))).toContain("the log is out of reach")
      const streamed = yield* Effect.exit(Stream.runDrain(handler.sendMessageStream(request("go"), context)))
      expect(Exit.isFailure(streamed) && String(Cause.squash(streamed.cause))).toContain("the log is out of reach")
      expect(runs.count).toBe(0)
      expect(ended).toEqual(["first", "first"])
      expect(yield* Effect.orDie(store.get(taskId, context))).toBeUndefined()
      // Its channel went with it: a later message would not join a channel no run publishes on.
      expect(channels.get(taskId, context)).toBeUndefined()
    }))
})
