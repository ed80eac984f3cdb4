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
import type * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Prompt from "@effect/ai/Prompt"
import * as Effect from "effect/Effect"
import type { Concurrency } from "effect/Types"
import type * as Agent from "./Agent.js"
import * as internal from "./internal/agent/prompting.js"
import { lazyModule } from "./internal/lazyModule.js"

// The loop that calls the model, and `@effect/ai` under it, load when an orchestrator is made: a client that imports
// the index loads none of it.
const internalOrchestrator = lazyModule(() => import("./internal/agent/orchestrator.js"))

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
 * @category constants
 * @since 0.1.0
 */
export const defaultInstruction: string = internal.defaultInstruction

/**
 * The orchestration could not end, reason `TurnLimit`: the model kept
 * calling tools for `maxTurns` calls (`turns`). Or the orchestrator could
 * not be made, reason `DuplicateTool`: two sub-agents would be offered as
 * one `tool` (names are sanitized to `[a-zA-Z0-9_-]`, so `flight booking`
 * and `flight.booking` collide).
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
 * @category errors
 * @since 0.1.0
 */
export const OrchestratorError: typeof internal.OrchestratorError = internal.OrchestratorError

/**
 * @category errors
 * @since 0.1.0
 */
export type OrchestratorError = internal.OrchestratorError

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
 * @category options
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
 * @category models
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
 * @category models
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
 * @category models
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

/**
 * Creates an orchestrator. Fails with `OrchestratorError` (reason
 * `DuplicateTool`) when two sub-agents get the same tool name.
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
 * @category constructors
 * @since 0.1.0
 */
export const make: <R = never>(options: Options<R>) => Effect.Effect<Orchestrator<R>, OrchestratorError> = (options) =>
  Effect.flatMap(internalOrchestrator, (orchestrator) => orchestrator.make(options))

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
 * @category utils
 * @since 0.1.0
 */
export const toolResults: (prompt: Prompt.Prompt) => ReadonlyArray<string> = internal.toolResults
