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
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import type { RequestHandler } from "./requestHandler.js"

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
