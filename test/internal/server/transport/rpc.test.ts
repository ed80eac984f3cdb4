import { type Task, TaskState } from "@a2a-js/sdk"
import type { TaskStore } from "@a2a-js/sdk/server"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as A2AServer from "../../../../src/A2AServer.js"
import * as AgentExecutor from "../../../../src/AgentExecutor.js"
import * as RemoteOutcome from "../../../../src/RemoteOutcome.js"
import { captureLogs, rpc, seededTask, untyped } from "../../../fixtures/serverAgents.js"

const card = { name: "rpc", description: "rpc" }
const agent: AgentExecutor.Agent = () => Effect.succeed(AgentExecutor.completedText("done"))

describe("the JSON-RPC dispatch", () => {
  it.scopedLive("a result the SDK's codec cannot encode is an opaque internal error, logged; not the caller's bad params", () => {
    const logs = captureLogs()
    return Effect.gen(function*() {
      // A store that kept a task through JSON.stringify: its raw bytes come back as {"0":104,...}, which the
      // codec's base64 encoding throws on once the handler has answered.
      const bytes = JSON.parse(JSON.stringify(new TextEncoder().encode("hi")))
      const task: Task = {
        ...seededTask("t-1", TaskState.TASK_STATE_COMPLETED, new Date().toISOString()),
        artifacts: [{
          artifactId: "a-1",
          name: "",
          description: "",
          parts: [{ content: { $case: "raw", value: untyped(bytes) }, metadata: {}, filename: "", mediaType: "" }],
          metadata: {},
          extensions: []
        }]
      }
      const taskStore: TaskStore = {
        save: () => Promise.resolve(),
        list: () => Promise.resolve({ tasks: [], nextPageToken: "", pageSize: 0, totalSize: 0 }),
        load: (taskId) => Promise.resolve(taskId === task.id ? structuredClone(task) : undefined)
      }
      const server = yield* A2AServer.make({ agent, card, taskStore })
      for (const [method, version] of [["GetTask", "1.0"], ["tasks/get", "0.3"]] as const) {
        const answer = yield* rpc(server.rpcUrl, method, { id: task.id }, version)
        const error = JSON.parse(answer.text).error
        expect(error.code).toBe(-32603)
        expect(error.message).toMatch(/^Internal error\. \(error_id: [0-9a-f]{12}\)$/)
        const errorId = Option.getOrThrow(RemoteOutcome.extractErrorId(error.message))
        const line = logs.lines.find((line) => line.annotations.errorId === errorId)
        expect(line?.message).toContain("Unexpected error in the JSON-RPC endpoint")
        expect(String(line?.annotations.cause)).toMatch(/argument must be of type string or an instance of Buffer/)
      }
    }).pipe(Effect.provide(logs.layer))
  })
})
