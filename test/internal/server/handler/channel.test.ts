/**
 * A task's channel: events appended in order, a burst in few appends, and
 * handed on only once appended; a refused append retried, then given up at
 * its deadline or at a shutdown.
 */
import { Role, type Task, TaskState } from "@a2a-js/sdk"
import { AgentEvent, type AgentExecutionEvent, ServerCallContext, UnauthenticatedUser } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import * as internalChannel from "../../../../src/internal/server/handler/channel.js"
import * as taskFold from "../../../../src/internal/wire/taskFold.js"

const taskId = "t-1"
const contextId = "c-1"
const context = new ServerCallContext({ user: new UnauthenticatedUser() })

const task: Task = {
  id: taskId,
  contextId,
  status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: undefined },
  artifacts: [],
  history: [],
  metadata: {}
}

const status = (i: number, state = TaskState.TASK_STATE_WORKING) =>
  AgentEvent.statusUpdate({
    taskId,
    contextId,
    status: {
      state,
      message: {
        messageId: `m${i}`,
        contextId,
        taskId,
        role: Role.ROLE_AGENT,
        parts: [],
        metadata: {},
        extensions: [],
        referenceTaskIds: []
      },
      timestamp: undefined
    },
    metadata: {}
  })

/** A store of one task that takes `delay` per append and refuses while `down`. */
const storeOf = (delay: number) => {
  const state = { down: false, stored: undefined as Task | undefined, appends: 0, calls: 0 }
  const append: internalChannel.Append = async (events) => {
    state.calls++
    await new Promise((resolve) => setTimeout(resolve, delay))
    if (state.down) throw new Error("connection refused")
    state.appends++
    state.stored = taskFold.fold(state.stored, events)
    return state.stored === undefined ? undefined : taskFold.copy(state.stored)
  }
  return { state, append }
}

const quiet: internalChannel.Retry = { retryMillis: 10_000, gaveUp: () => {} }

describe("a task's channel", () => {
  it("appends a burst in few appends, in order, and hands each event on only once the store has it", async () => {
    const { append, state } = storeOf(5)
    const { channel } = internalChannel.makeChannels().open(taskId, context, append, quiet)
    const seen: Array<{ readonly id: string; readonly inStore: boolean }> = []
    channel.on("event", (event: AgentExecutionEvent) => {
      const id = event.kind === "statusUpdate" ? event.data.status?.message?.messageId ?? "" : event.kind
      const stored = state.stored
      seen.push({
        id,
        inStore: stored !== undefined && (id === "task" || stored.history.some((message) => message.messageId === id))
      })
    })
    channel.publish(AgentEvent.task(task))
    for (let i = 0; i < 2000; i++) channel.publish(status(i))
    channel.publish(status(2000, TaskState.TASK_STATE_COMPLETED))
    await channel.appended()
    expect(seen.length).toBe(2002)
    expect(seen.every((event) => event.inStore)).toBe(true)
    expect(seen.slice(1).map((event) => event.id)).toEqual(Array.from({ length: 2001 }, (_, i) => `m${i}`))
    // The first event alone, then everything that queued behind it.
    expect(state.appends).toBe(2)
    expect(state.stored?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })

  it("hands a follower the task as each batch left it in the store, and ends once its events are appended", async () => {
    const { append, state } = storeOf(1)
    const channels = internalChannel.makeChannels()
    const { channel } = channels.open(taskId, context, append, quiet)
    const states: Array<TaskState | undefined> = []
    let finished = false
    channel.follow({
      event: (_, folded) => states.push(folded?.status?.state),
      failed: () => {},
      finished: () => {
        finished = true
        // Whatever its followers had, the store has.
        expect(state.stored?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
      }
    })
    channel.publish(AgentEvent.task(task))
    channel.publish(status(1, TaskState.TASK_STATE_COMPLETED))
    channel.finished()
    // Ending, it takes no new run: the task's next run gets a channel of its own.
    expect(channels.get(taskId, context)).toBeUndefined()
    await channel.appended()
    await new Promise((resolve) => setTimeout(resolve, 0))
    expect(finished).toBe(true)
    expect(states.at(-1)).toBe(TaskState.TASK_STATE_COMPLETED)
  })

  it("retries what the store refuses, with what came meanwhile; its followers hear of the refusal once", async () => {
    const { append, state } = storeOf(0)
    const { channel } = internalChannel.makeChannels().open(taskId, context, append, quiet)
    const failures: Array<unknown> = []
    channel.follow({ event: () => {}, failed: (error) => failures.push(error), finished: () => {} })
    state.down = true
    channel.publish(AgentEvent.task(task))
    channel.publish(status(1, TaskState.TASK_STATE_COMPLETED))
    await new Promise((resolve) => setTimeout(resolve, 250))
    state.down = false
    await channel.appended()
    expect(failures.length).toBe(1)
    expect(state.stored?.status?.state).toBe(TaskState.TASK_STATE_COMPLETED)
  })

  it("gives up at a shutdown's deadline: no store call after it", async () => {
    const { append, state } = storeOf(0)
    const gaveUp: Array<string> = []
    const { channel } = internalChannel.makeChannels().open(taskId, context, append, {
      retryMillis: 10_000,
      gaveUp: (of, reason) => gaveUp.push(`${of} ${reason}`)
    })
    state.down = true
    channel.publish(AgentEvent.task(task))
    await new Promise((resolve) => setTimeout(resolve, 50))
    channel.stopAppending()
    await channel.appended()
    const calls = state.calls
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(state.calls).toBe(calls)
    expect(gaveUp).toEqual([`${taskId} shutdown`])
  })

  it("hands a bare message on without the store: it is no task's", async () => {
    const { append, state } = storeOf(0)
    const { channel } = internalChannel.makeChannels().open(taskId, context, append, quiet)
    const kinds: Array<string> = []
    channel.on("event", (event: AgentExecutionEvent) => kinds.push(event.kind))
    channel.publish(AgentEvent.message({
      messageId: "reply",
      contextId,
      taskId: "",
      role: Role.ROLE_AGENT,
      parts: [],
      metadata: {},
      extensions: [],
      referenceTaskIds: []
    }))
    await channel.appended()
    expect([kinds, state.calls]).toEqual([["message"], 0])
  })
})
