/**
 * The request handler (`requestHandler.ts`) as the SDK's transports call
 * one: its `A2ARequestHandler` interface, of promises and async generators,
 * run on the runtime it was made with. The SDK's JSON-RPC codecs (v1.0 and
 * v0.3) and our HTTP+JSON and gRPC transports call it unchanged.
 *
 * @internal
 */
import type { StreamResponse } from "@a2a-js/sdk"
import type { A2ARequestHandler } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import type { Failure, RequestHandler } from "./requestHandler.js"

/**
 * `failed`: what a call rejects with, from how it failed and its operation's
 * name; by default the error itself (`Cause.squash`), not a FiberFailure, as
 * the transports map the SDK's errors by their class.
 *
 * @internal
 */
export const toSdk = (
  handler: RequestHandler,
  runtime: Runtime.Runtime<never>,
  failed: (cause: Cause.Cause<unknown>, operation: string) => unknown = Cause.squash
): A2ARequestHandler => {
  const runPromiseExit = Runtime.runPromiseExit(runtime)
  const promise = <A, E>(operation: string, effect: Effect.Effect<A, E>): Promise<A> =>
    runPromiseExit(effect).then((exit) =>
      Exit.isSuccess(exit) ? exit.value : Promise.reject(failed(exit.cause, operation))
    )
  const generator = async function*(
    operation: string,
    stream: Stream.Stream<StreamResponse, unknown>
  ): AsyncGenerator<StreamResponse, void, undefined> {
    yield* Stream.toAsyncIterableRuntime(
      Stream.catchAllCause(stream, (cause) => Stream.fail(failed(cause, operation))),
      runtime
    )
  }
  return {
    getAgentCard: () => promise("getAgentCard", handler.agentCard),
    getAuthenticatedExtendedAgentCard: (_params, context) =>
      promise("getAuthenticatedExtendedAgentCard", handler.extendedAgentCard(context)),
    sendMessage: (params, context) => promise("sendMessage", handler.sendMessage(params, context)),
    sendMessageStream: (params, context) => generator("sendMessageStream", handler.sendMessageStream(params, context)),
    getTask: (params, context) => promise("getTask", handler.getTask(params, context)),
    listTasks: (params, context) => promise("listTasks", handler.listTasks(params, context)),
    cancelTask: (params, context) => promise("cancelTask", handler.cancelTask(params, context)),
    resubscribe: (params, context) => generator("resubscribe", handler.resubscribe(params, context)),
    createTaskPushNotificationConfig: (params, context) =>
      promise("createTaskPushNotificationConfig", handler.createPushConfig(params, context)),
    getTaskPushNotificationConfig: (params, context) =>
      promise("getTaskPushNotificationConfig", handler.getPushConfig(params, context)),
    listTaskPushNotificationConfigs: (params, context) =>
      promise("listTaskPushNotificationConfigs", handler.listPushConfigs(params, context)),
    deleteTaskPushNotificationConfig: (params, context) =>
      promise("deleteTaskPushNotificationConfig", handler.deletePushConfig(params, context))
  }
}

// What a promise of the SDK's shape rejects with, as the handler fails: its errors are `Error`s, anything else is one.
const failureOf = (error: unknown): Failure => error instanceof Error ? error : new Error(String(error))

/**
 * An SDK-shaped handler as ours: while a stage still speaks the SDK's shape,
 * the stages after it take it through this.
 *
 * @internal
 */
export const fromSdk = (handler: A2ARequestHandler): RequestHandler => {
  const effect = <A>(call: () => Promise<A>): Effect.Effect<A, Failure> =>
    Effect.tryPromise({ try: call, catch: failureOf })
  const stream = (
    call: () => AsyncGenerator<StreamResponse, void, undefined>
  ): Stream.Stream<StreamResponse, Failure> => Stream.fromAsyncIterable({ [Symbol.asyncIterator]: call }, failureOf)
  return {
    agentCard: Effect.orDie(effect(() => handler.getAgentCard())),
    extendedAgentCard: (context) => effect(() => handler.getAuthenticatedExtendedAgentCard({ tenant: "" }, context)),
    sendMessage: (params, context) => effect(() => handler.sendMessage(params, context)),
    sendMessageStream: (params, context) => stream(() => handler.sendMessageStream(params, context)),
    getTask: (params, context) => effect(() => handler.getTask(params, context)),
    listTasks: (params, context) => effect(() => handler.listTasks(params, context)),
    cancelTask: (params, context) => effect(() => handler.cancelTask(params, context)),
    resubscribe: (params, context) => stream(() => handler.resubscribe(params, context)),
    createPushConfig: (params, context) => effect(() => handler.createTaskPushNotificationConfig(params, context)),
    getPushConfig: (params, context) => effect(() => handler.getTaskPushNotificationConfig(params, context)),
    listPushConfigs: (params, context) => effect(() => handler.listTaskPushNotificationConfigs(params, context)),
    deletePushConfig: (params, context) => effect(() => handler.deleteTaskPushNotificationConfig(params, context))
  }
}
