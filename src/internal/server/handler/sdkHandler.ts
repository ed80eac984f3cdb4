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

/** @internal */
export const toSdk = (handler: RequestHandler, runtime: Runtime.Runtime<never>): A2ARequestHandler => {
  const runPromiseExit = Runtime.runPromiseExit(runtime)
  // Rejects with the error itself, not a FiberFailure: the transports map the SDK's errors by their class.
  const promise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
    runPromiseExit(effect).then((exit) => Exit.isSuccess(exit) ? exit.value : Promise.reject(Cause.squash(exit.cause)))
  const generator = async function*(
    stream: Stream.Stream<StreamResponse, unknown>
  ): AsyncGenerator<StreamResponse, void, undefined> {
    yield* Stream.toAsyncIterableRuntime(stream, runtime)
  }
  return {
    getAgentCard: () => promise(handler.agentCard),
    getAuthenticatedExtendedAgentCard: (_params, context) => promise(handler.extendedAgentCard(context)),
    sendMessage: (params, context) => promise(handler.sendMessage(params, context)),
    sendMessageStream: (params, context) => generator(handler.sendMessageStream(params, context)),
    getTask: (params, context) => promise(handler.getTask(params, context)),
    listTasks: (params, context) => promise(handler.listTasks(params, context)),
    cancelTask: (params, context) => promise(handler.cancelTask(params, context)),
    resubscribe: (params, context) => generator(handler.resubscribe(params, context)),
    createTaskPushNotificationConfig: (params, context) => promise(handler.createPushConfig(params, context)),
    getTaskPushNotificationConfig: (params, context) => promise(handler.getPushConfig(params, context)),
    listTaskPushNotificationConfigs: (params, context) => promise(handler.listPushConfigs(params, context)),
    deleteTaskPushNotificationConfig: (params, context) => promise(handler.deletePushConfig(params, context))
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
