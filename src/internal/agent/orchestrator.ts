/**
 * The code behind `Orchestrator`: each sub-agent as a tool, and the loop
 * model -> tools -> model of one answer.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import type * as Agent from "../../Agent.js"
import type { Options, Orchestrator, Reply, SubAgentCall } from "../../Orchestrator.js"
import * as internalAgent from "./agent.js"
import { defaultInstruction, OrchestratorError, toolResults } from "./prompting.js"

export { defaultInstruction, OrchestratorError, toolResults }

const toolName = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64) || "agent"

const makeTool = (name: string, description: string) =>
  Tool.make(name, {
    description,
    parameters: { input: Schema.String.annotations({ description: "The request for this agent, in plain language" }) },
    success: Schema.String
  })

type AgentTool = ReturnType<typeof makeTool>

const withInstruction = (prompt: Prompt.Prompt, instruction: string): Prompt.Prompt =>
  instruction === ""
    ? prompt
    : prompt.content.some((message) => message.role === "system")
    ? Prompt.appendSystem(prompt, `\n\n${instruction}`)
    : Prompt.setSystem(prompt, instruction)

/** @internal */
export const make = <R = never>(options: Options<R>): Effect.Effect<Orchestrator<R>, OrchestratorError> =>
  Effect.gen(function*() {
    const name = options.name ?? "orchestrator"
    const maxTurns = options.maxTurns ?? 10
    if (!Number.isInteger(maxTurns) || maxTurns < 1) {
      return yield* Effect.dieMessage(`Orchestrator: maxTurns must be a positive integer, got ${maxTurns}`)
    }
    const tools = new Map<string, Agent.Agent<never, R>>()
    for (const agent of options.agents) {
      const tool = toolName(agent.name)
      const taken = tools.get(tool)
      if (taken !== undefined) {
        return yield* new OrchestratorError({
          reason: "DuplicateTool",
          turns: 0,
          tool,
          agents: [taken.name, agent.name]
        })
      }
      tools.set(tool, agent)
    }
    // eslint-disable-next-line no-restricted-syntax -- Toolkit.make types its tools from a list written out; these are named at run time, each an AgentTool
    const toolkit = Toolkit.make(
      ...Array.from(tools, ([tool, agent]) => makeTool(tool, agent.description))
    ) as unknown as Toolkit.Toolkit<Record<string, AgentTool>>
    const instruction = [options.instructions ?? "", options.remoteFailureInstruction ?? defaultInstruction]
      .filter((text) => text.trim() !== "")
      .join("\n\n")

    const answer = (
      input: Prompt.RawInput,
      onProgress: (progress: Agent.Progress) => Effect.Effect<void>
    ): Effect.Effect<Reply, AiError.AiError | OrchestratorError, LanguageModel.LanguageModel | R> =>
      Effect.gen(function*() {
        // Without the captured parent span, so each sub-agent's spans nest under the tool call.
        const context = Context.omit(Tracer.ParentSpan)(yield* Effect.context<R>()) as Context.Context<R>
        const calls = yield* Ref.make<ReadonlyArray<SubAgentCall>>([])
        const handlers: Record<string, (params: { readonly input: string }) => Effect.Effect<string>> = {}
        for (const [tool, agent] of tools) {
          handlers[tool] = ({ input }) =>
            internalAgent.result(agent, input, onProgress).pipe(
              Effect.tap((result) => Ref.update(calls, (all) => [...all, { agent: agent.name, tool, input, result }])),
              Effect.map((result) => result.text),
              Effect.provide(context)
            )
        }
        const withHandlers = yield* Effect.provide(toolkit, yield* toolkit.toContext(handlers))
        let prompt = withInstruction(Prompt.make(input), instruction)
        for (let turn = 1; turn <= maxTurns; turn++) {
          const response = yield* LanguageModel.generateText({
            prompt,
            toolkit: withHandlers,
            ...(options.concurrency === undefined ? {} : { concurrency: options.concurrency }),
            // The last turn must answer. A tool it calls anyway is not run: its side effect would happen, and
            // the caller then be told the request failed (TurnLimit), and likely try it again.
            ...(turn === maxTurns ? { toolChoice: "none" as const, disableToolCallResolution: true as const } : {})
          })
          prompt = Prompt.merge(prompt, Prompt.fromResponseParts(response.content))
          if (response.toolCalls.length === 0) {
            return { text: response.text, calls: yield* Ref.get(calls), prompt, turns: turn }
          }
        }
        return yield* new OrchestratorError({ reason: "TurnLimit", turns: maxTurns })
      })

    return {
      name,
      description: options.description ?? `Answers with the help of: ${Array.from(tools.keys()).join(", ")}`,
      tools,
      respond: (prompt) => answer(prompt, () => Effect.void),
      run: (input) =>
        internalAgent.progressStream((progress) =>
          Effect.map(answer(input, progress), (reply) => internalAgent.textResult(name, reply.text))
        )
    } satisfies Orchestrator<R>
  })
