/**
 * effect-a2a: typed, explicit failure handling across the A2A boundary.
 *
 * @since 0.1.0
 */
export * as A2AClientError from "./A2AClientError.js"
export * as A2AServer from "./A2AServer.js"
export * as Agent from "./Agent.js"
export * as AgentCardResolutionError from "./AgentCardResolutionError.js"
export * as AgentExecutor from "./AgentExecutor.js"
export * as Authentication from "./Authentication.js"
export * as CircuitBreaker from "./CircuitBreaker.js"
export * as FailureHint from "./FailureHint.js"
export * as GuardedRemoteAgent from "./GuardedRemoteAgent.js"
export * as Idempotency from "./Idempotency.js"
export * as IdempotencyLedger from "./IdempotencyLedger.js"
export * as Observability from "./Observability.js"
export * as Orchestrator from "./Orchestrator.js"
export * as Part from "./Part.js"
export * as PushReceiver from "./PushReceiver.js"
export * as RemoteAgent from "./RemoteAgent.js"
export * as RemoteEvent from "./RemoteEvent.js"
export * as RemoteOutcome from "./RemoteOutcome.js"
export * as RetryPolicy from "./RetryPolicy.js"
export * as ScriptedLanguageModel from "./ScriptedLanguageModel.js"
