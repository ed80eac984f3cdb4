/**
 * Task store soak: 10^5 tasks (`BENCH_TASKS` to change it) through the
 * default task store (the bounded in-memory one, default options) and the
 * SDK's unbounded `InMemoryTaskStore`, in the same process. The stores are
 * driven directly, not through a server: each task is saved three times, as
 * the request handler does (submitted, working, completed with the agent's
 * reply and an artifact), then loaded once, as a `GetTask` would.
 *
 * Reported: the heap kept once every task has ended (after `gc()`, against
 * the heap before the run, the store still referenced), for the bounded
 * store twice: at once, where `maxFinished` (10,000) bounds it, and once its
 * injected clock has moved past the retention (1 hour); and the time per task.
 *
 *   npx tsx bench/task-store-soak.ts
 */
import { type ListTasksRequest, Role, type Task, TaskState } from "@a2a-js/sdk"
import { InMemoryTaskStore, ServerCallContext, type TaskStore, UnauthenticatedUser } from "@a2a-js/sdk/server"
import * as Runtime from "effect/Runtime"
import { randomUUID } from "node:crypto"
import { performance } from "node:perf_hooks"
import * as v8 from "node:v8"
import * as vm from "node:vm"
import * as memoryStore from "../src/internal/server/store/memoryStore.js"
import * as shelf from "../src/internal/server/store/shelf.js"
import * as internalStore from "../src/internal/server/store/store.js"
import { report } from "./report.js"

const TASKS = Number(process.env.BENCH_TASKS ?? 100_000)
const MB = 1024 * 1024

// `bench/run.ts` starts every bench without `--expose-gc`: expose it from here.
v8.setFlagsFromString("--expose-gc")
const gc = vm.runInNewContext("gc") as () => void

const heapAfterGc = () => {
  for (let i = 0; i < 3; i++) gc()
  return process.memoryUsage().heapUsed
}

const context = new ServerCallContext({ user: new UnauthenticatedUser() })

const text = (value: string) => ({
  content: { $case: "text" as const, value },
  metadata: undefined,
  filename: "",
  mediaType: ""
})

const message = (role: Role, taskId: string, contextId: string, value: string) => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role,
  parts: [text(value)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: []
})

const status = (state: TaskState, agentMessage?: ReturnType<typeof message>) => ({
  state,
  message: agentMessage,
  timestamp: new Date().toISOString()
})

/** One task's life, as the request handler saves it. */
const run = async (store: TaskStore, i: number) => {
  const id = randomUUID()
  const contextId = randomUUID()
  const task: Task = {
    id,
    contextId,
    status: status(TaskState.TASK_STATE_SUBMITTED),
    artifacts: [],
    history: [message(Role.ROLE_USER, id, contextId, `book flight ${i} from Paris to Lisbon on Friday`)],
    metadata: {}
  }
  await store.save(task, context)
  task.status = status(TaskState.TASK_STATE_WORKING, message(Role.ROLE_AGENT, id, contextId, "thinking"))
  await store.save(task, context)
  task.history.push(task.status.message!)
  task.artifacts.push({
    artifactId: randomUUID(),
    name: "reply",
    description: "",
    parts: [text(`booked flight ${i}: seat 12A, confirmation ${randomUUID()}`)],
    metadata: {},
    extensions: []
  })
  task.status = status(TaskState.TASK_STATE_COMPLETED, message(Role.ROLE_AGENT, id, contextId, `booked flight ${i}`))
  await store.save(task, context)
  if ((await store.load(id, context))?.id !== id) throw new Error(`task ${i} was not stored`)
}

const countOf = async (store: TaskStore) => {
  const request: ListTasksRequest = {
    tenant: "",
    contextId: "",
    status: TaskState.TASK_STATE_UNSPECIFIED,
    pageSize: 1,
    pageToken: "",
    historyLength: undefined,
    statusTimestampAfter: undefined,
    includeArtifacts: false
  }
  return (await store.list(request, context)).totalSize
}

const soak = async (store: TaskStore) => {
  const before = heapAfterGc()
  const start = performance.now()
  for (let i = 0; i < TASKS; i++) await run(store, i)
  const ms = performance.now() - start
  return { growth: (heapAfterGc() - before) / MB, perTask: (ms * 1000) / TASKS }
}

// The SDK's store, measured while it still holds its tasks, then let go of.
const unbounded = async () => {
  const sdk = new InMemoryTaskStore()
  const measured = await soak(sdk)
  if (await countOf(sdk) !== TASKS) throw new Error("the SDK's store lost tasks")
  return measured
}

const main = async () => {
  const peer = await unbounded()

  const clock = { now: 0 }
  const ours = internalStore.toSdk(memoryStore.make({ now: () => clock.now }), Runtime.defaultRuntime)
  const bounded = await soak(ours)
  const kept = await countOf(ours)
  const expected = Math.min(TASKS, shelf.defaults.maxFinished)
  if (kept !== expected) throw new Error(`the bounded store kept ${kept} tasks, not ${expected}`)

  // The retention passes: the next call of the store forgets every ended task.
  const before = heapAfterGc()
  clock.now += 3600_000
  if (await countOf(ours) !== 0) throw new Error("retention did not forget")
  const afterRetention = bounded.growth - (before - heapAfterGc()) / MB

  console.error(`${TASKS} tasks; bounded store kept ${kept}`)
  report("task-store-soak", [
    {
      name: `heap kept after ${TASKS} ended tasks (maxFinished bound)`,
      ours: bounded.growth,
      peer: peer.growth,
      unit: "MB",
      target: "ours < 50 MB",
      pass: bounded.growth < 50
    },
    {
      name: `heap kept after ${TASKS} ended tasks, retention elapsed`,
      ours: afterRetention,
      peer: peer.growth,
      unit: "MB",
      target: "ours < 50 MB",
      pass: afterRetention < 50
    },
    {
      name: "time per task (3 saves, 1 load)",
      ours: bounded.perTask,
      peer: peer.perTask,
      unit: "µs",
      target: "ratio ≤ 1.5",
      pass: bounded.perTask <= 1.5 * peer.perTask
    }
  ])
}

await main()
