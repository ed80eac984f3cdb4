/**
 * What the server benchmarks share: the same trivial agent on both sides
 * (the SDK's executor and ours), rounds of requests at a fixed concurrency,
 * and series interleaved round by round. Not a benchmark itself.
 */
import { Role, TaskState } from "@a2a-js/sdk"
import { AgentEvent, type AgentExecutor as SdkAgentExecutor } from "@a2a-js/sdk/server"
import { Effect, Logger, Scope } from "effect"
import * as A2AServer from "../src/A2AServer.js"
import * as AgentExecutor from "../src/AgentExecutor.js"
import * as Part from "../src/Part.js"

export const CONCURRENCY = 16
export const PER_ROUND = 300

/** The SDK's side of the trivial agent: the task, then COMPLETED with an "ok" message, or FAILED when asked to "fail", as ours. */
export const trivialExecutor: SdkAgentExecutor = {
  execute: async (context, bus) => {
    const content = context.userMessage.parts[0]?.content
    const fails = content?.$case === "text" && content.value === "fail"
    bus.publish(AgentEvent.task({
      id: context.taskId,
      contextId: context.contextId,
      status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
      artifacts: [],
      history: [context.userMessage],
      metadata: {}
    }))
    bus.publish(AgentEvent.statusUpdate({
      taskId: context.taskId,
      contextId: context.contextId,
      status: {
        state: fails ? TaskState.TASK_STATE_FAILED : TaskState.TASK_STATE_COMPLETED,
        message: {
          messageId: crypto.randomUUID(),
          contextId: context.contextId,
          taskId: context.taskId,
          role: Role.ROLE_AGENT,
          parts: [{ content: { $case: "text", value: "ok" }, metadata: {}, filename: "", mediaType: "text/plain" }],
          metadata: {},
          extensions: [],
          referenceTaskIds: []
        },
        timestamp: new Date().toISOString()
      },
      metadata: {}
    }))
    bus.finished()
  },
  cancelTask: async () => {}
}

// The FAILED path logs its cause like in production; the line is formatted and dropped.
const quietLogger = Logger.replace(Logger.defaultLogger, Logger.map(Logger.logfmtLogger, () => undefined))

/** Our side of the trivial agent, for the life of `scope`: COMPLETED with "ok", or FAILED when asked to "fail". */
export const startOurs = (
  scope: Scope.Scope,
  options: Pick<A2AServer.Options<Error, never>, "transports" | "push" | "taskStore"> = {}
) =>
  Effect.runPromise(
    A2AServer.make({
      ...options,
      agent: (request) => {
        return Part.textOf(request.message.parts) === "fail"
          ? Effect.fail(new Error("trivial failure"))
          : Effect.succeed(AgentExecutor.completedText("ok"))
      },
      card: { name: "ours", description: "bench" }
    }).pipe(Scope.extend(scope), Effect.provide(quietLogger))
  )

/** `PER_ROUND` calls of `send`, `CONCURRENCY` at a time; the time they took. */
export const round = async (send: () => Promise<unknown>): Promise<number> => {
  let next = 0
  const start = performance.now()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < PER_ROUND) {
      next++
      await send()
    }
  }))
  return performance.now() - start
}

export type PerSeries<Series extends string> = Record<Series, number>

/**
 * `rounds` rounds of one `measure` call per series, in an order rotated every
 * round so that load from elsewhere on the machine spreads over all of them;
 * what each call measured, round by round.
 */
export const interleave = async <Entry extends readonly [string, ...Array<unknown>]>(
  rounds: number,
  series: ReadonlyArray<Entry>,
  measure: (entry: Entry) => Promise<number>
): Promise<Array<PerSeries<Entry[0]>>> => {
  const results: Array<PerSeries<Entry[0]>> = []
  for (let i = 0; i < rounds; i++) {
    const result = {} as PerSeries<Entry[0]>
    for (let j = 0; j < series.length; j++) {
      const entry = series[(i + j) % series.length]!
      result[entry[0] as Entry[0]] = await measure(entry)
    }
    results.push(result)
  }
  return results
}

/** Each series' mean per request over the rounds (given as one total each, or round by round). */
export const perRequest = <Series extends string>(
  results: ReadonlyArray<PerSeries<Series>>,
  rounds = results.length
): PerSeries<Series> => {
  const requests = PER_ROUND * rounds
  const mean = {} as PerSeries<Series>
  for (const result of results) {
    for (const series of Object.keys(result) as Array<Series>) {
      mean[series] = (mean[series] ?? 0) + result[series] / requests
    }
  }
  return mean
}
