/**
 * A parent agent driven by `@effect/ai`'s `LanguageModel`, so any provider of
 * the Effect ecosystem (OpenAI, Anthropic, Google, ...) plugs in as a Layer.
 *
 * Each sub-agent is offered to the model as a tool taking one string,
 * `input`. The sub-agent's result text, with any `REMOTE_*` marker of a
 * `GuardedRemoteAgent`, goes back into the model's context as that tool's
 * result, and the loop model -> tools -> model goes on until the model answers
 * without calling a tool, for at most `maxTurns` model calls.
 *
 * Sub-agents must be `Agent<never>`: every remote failure is already text,
 * so an unguarded remote agent (whose failures would be errors the model never
 * sees) does not compile here. A defect in a sub-agent stays a defect.
 *
 * @since 0.1.0
 */
import type * as AiError from "@effect/ai/AiError"
import * as LanguageModel from "@effect/ai/LanguageModel"
import * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import * as Toolkit from "@effect/ai/Toolkit"
import { Context, Effect, Mailbox, Ref, Schema, Stream, Tracer } from "effect"
import type { Concurrency } from "effect/Types"
import * as Agent from "./Agent.js"

/**
 * The paragraph added to the system instruction by default, so that the model
 * never reports a failed or unknown remote action as done.
 *
 * @example
 * ```ts
 * import { Agent, Orchestrator } from "effect-a2a"
 *
 * declare const booking: Agent.Agent
 * const travel = Orchestrator.make({
 *   agents: [booking],
 *   remoteFailureInstruction: `${Orchestrator.defaultInstruction} Never retry a payment without asking.`
 * })
 * ```
 * @since 0.1.0
 */
export const defaultInstruction =
  "Some work is delegated to sub-agents through tools. If a sub-agent replies with REMOTE_FAILED or " +
  "REMOTE_UNAVAILABLE, do not claim the action succeeded: say it could not be completed, give the error_id " +
  "when there is one, and offer to retry. REMOTE_CIRCUIT_OPEN means the request was not sent because the " +
  "sub-agent keeps failing: say the action could not be completed now and when it may be retried. " +
  "REMOTE_CANCELED and REMOTE_REJECTED mean the action was not done; give the reason. " +
  "REMOTE_INPUT_REQUIRED carries the sub-agent's question: ask it to the user. " +
  "REMOTE_AUTH_REQUIRED means the user must sign in or authorize first."

/**
 * The orchestration could not end: the model kept calling tools for
 * `maxTurns` calls.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Orchestrator } from "effect-a2a"
 *
 * declare const travel: Orchestrator.Orchestrator<never>
 * const answer = travel.respond("Book flight 4821 for Ana").pipe(
 *   Effect.map((reply) => reply.text),
 *   Effect.catchTag("OrchestratorError", (error) => Effect.succeed(`Sorry, I gave up after ${error.turns} steps.`))
 * )
 * ```
 * @since 0.1.0
 */
export class OrchestratorError extends Schema.TaggedError<OrchestratorError>("effect-a2a/OrchestratorError")(
  "OrchestratorError",
  {
    reason: Schema.Literal("TurnLimit"),
    turns: Schema.Int
  }
) {
  override get message(): string {
    return `the model was still calling tools after ${this.turns} turns (those of the last turn were not run)`
  }
}

/**
 * What {@link make} needs: the sub-agents, the instructions, and the limits of
 * one answer.
 *
 * @example
 * ```ts
 * import { Agent, Orchestrator } from "effect-a2a"
 *
 * declare const booking: Agent.Agent
 * declare const payments: Agent.Agent
 * const options: Orchestrator.Options<never> = {
 *   name: "travel",
 *   agents: [booking, payments],
 *   instructions: "You are a travel assistant.",
 *   maxTurns: 6
 * }
 * const travel = Orchestrator.make(options)
 * ```
 * @since 0.1.0
 */
export interface Options<R> {
  /** Default `"orchestrator"`. */
  readonly name?: string | undefined
  readonly description?: string | undefined
  /** The sub-agents, each offered as a tool named after it. */
  readonly agents: ReadonlyArray<Agent.Agent<never, R>>
  /** The system instruction. */
  readonly instructions?: string | undefined
  /** Added after `instructions`; {@link defaultInstruction} by default, `""` for none. */
  readonly remoteFailureInstruction?: string | undefined
  /** The most model calls of one answer. Default 10. */
  readonly maxTurns?: number | undefined
  /** How many tool calls of one model turn run at once. Default 1. */
  readonly concurrency?: Concurrency | undefined
}

/**
 * A call of a sub-agent made while answering.
 *
 * @example
 * ```ts
 * import { Option } from "effect"
 * import { Orchestrator } from "effect-a2a"
 *
 * declare const reply: Orchestrator.Reply
 * const failedCalls = reply.calls
 *   .filter((call) => Option.exists(call.result.outcome, (outcome) => outcome._tag === "Failed"))
 *   .map((call) => `${call.agent}: ${call.input}`)
 * ```
 * @since 0.1.0
 */
export interface SubAgentCall {
  readonly agent: string
  readonly tool: string
  readonly input: string
  readonly result: Agent.Result
}

/**
 * What {@link Orchestrator} `respond` returns: the answer, and how the model
 * came to it.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Orchestrator } from "effect-a2a"
 *
 * declare const travel: Orchestrator.Orchestrator<never>
 * const program = Effect.gen(function*() {
 *   const reply = yield* travel.respond("Book flight 4821 for Ana")
 *   yield* Effect.logInfo(`${reply.turns} model calls, ${reply.calls.length} sub-agent calls`)
 *   return reply.text
 * })
 * ```
 * @since 0.1.0
 */
export interface Reply {
  /** The model's final text. */
  readonly text: string
  readonly calls: ReadonlyArray<SubAgentCall>
  /** The whole conversation, final answer included. */
  readonly prompt: Prompt.Prompt
  /** How many times the model was called. */
  readonly turns: number
}

/**
 * An orchestrator: an {@link Agent.Agent} itself (its `run` forwards the
 * sub-agents' progress), plus `respond` for a whole prompt.
 *
 * @example
 * ```ts
 * import { Effect, Stream } from "effect"
 * import { Orchestrator } from "effect-a2a"
 *
 * declare const travel: Orchestrator.Orchestrator<never>
 * // as an agent: the sub-agents' progress, then the answer as the last event
 * const events = travel.run("Book flight 4821 for Ana").pipe(
 *   Stream.runForEach((event) => Effect.logInfo(event.text))
 * )
 * ```
 * @since 0.1.0
 */
export interface Orchestrator<R>
  extends Agent.Agent<AiError.AiError | OrchestratorError, LanguageModel.LanguageModel | R>
{
  /** The tool name of each sub-agent. */
  readonly tools: ReadonlyMap<string, Agent.Agent<never, R>>
  readonly respond: (
    prompt: Prompt.RawInput
  ) => Effect.Effect<Reply, AiError.AiError | OrchestratorError, LanguageModel.LanguageModel | R>
}

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

/**
 * Creates an orchestrator. Dies when two sub-agents get the same tool name.
 *
 * @example
 * ```ts
 * import { Effect } from "effect"
 * import { Agent, Orchestrator } from "effect-a2a"
 *
 * declare const booking: Agent.Agent // e.g. a GuardedRemoteAgent
 *
 * const program = Effect.gen(function*() {
 *   const travel = yield* Orchestrator.make({ agents: [booking], instructions: "You are a travel assistant." })
 *   const reply = yield* travel.respond("Book flight 4821 for Ana")
 *   return reply.text
 * }) // needs a LanguageModel layer, e.g. from @effect/ai-openai
 * ```
 * @since 0.1.0
 */
export const make = <R = never>(options: Options<R>): Effect.Effect<Orchestrator<R>> =>
  Effect.gen(function*() {
    const name = options.name ?? "orchestrator"
    const maxTurns = options.maxTurns ?? 10
    if (!Number.isInteger(maxTurns) || maxTurns < 1) {
      return yield* Effect.dieMessage(`Orchestrator: maxTurns must be a positive integer, got ${maxTurns}`)
    }
    const tools = new Map<string, Agent.Agent<never, R>>()
    for (const agent of options.agents) {
      const tool = toolName(agent.name)
      if (tools.has(tool)) return yield* Effect.dieMessage(`Orchestrator: two sub-agents are offered as the tool ${tool}`)
      tools.set(tool, agent)
    }
    const toolkit = Toolkit.make(...Array.from(tools, ([tool, agent]) => makeTool(tool, agent.description))) as
      unknown as Toolkit.Toolkit<Record<string, AgentTool>>
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
            Agent.result(agent, input, onProgress).pipe(
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
        Stream.unwrapScoped(Effect.gen(function*() {
          const mailbox = yield* Mailbox.make<Agent.Event, AiError.AiError | OrchestratorError>()
          yield* answer(input, (progress) => Effect.asVoid(mailbox.offer(progress))).pipe(
            Effect.flatMap((reply) => mailbox.offer(Agent.textResult(name, reply.text))),
            Mailbox.into(mailbox),
            Effect.forkScoped
          )
          return Mailbox.toStream(mailbox)
        }))
    } satisfies Orchestrator<R>
  })

/**
 * The text of every tool result in a prompt, in order: what the model was
 * told by the sub-agents.
 *
 * @example
 * ```ts
 * import { Orchestrator } from "effect-a2a"
 * declare const reply: Orchestrator.Reply
 * Orchestrator.toolResults(reply.prompt) // ["REMOTE_FAILED Agent execution failed. (error_id: ...)"]
 * ```
 * @since 0.1.0
 */
export const toolResults = (prompt: Prompt.Prompt): ReadonlyArray<string> =>
  prompt.content.flatMap((message) =>
    message.role === "tool"
      ? message.content.map((part) => typeof part.result === "string" ? part.result : JSON.stringify(part.result))
      : []
  )
