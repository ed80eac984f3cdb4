/**
 * The request handler (`requestHandler.ts`) as the SDK's transports call
 * one: its `A2ARequestHandler` interface, of promises and async generators,
 * run on the runtime it was made with. The SDK's JSON-RPC codecs (v1.0 and
 * v0.3) call it so; HTTP+JSON and gRPC call the Effect handler itself.
 *
 * @internal
 */
import type { StreamResponse } from "@a2a-js/sdk"
import type { A2ARequestHandler, ServerCallContext } from "@a2a-js/sdk/server"
import * as Cause from "effect/Cause"
import type * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import * as Stream from "effect/Stream"
import type { RequestHandler } from "./requestHandler.js"

/**
 * `failed`: what a call rejects with, from how it failed and its operation's
 * name; by default the error itself (`Cause.squash`), not a FiberFailure, as
 * the transports map the SDK's errors by their class.
 * `called`: told the context of each call answered by one value as the
 * handler is called, so that a codec can tell its own failure to decode the
 * params (before) from one to encode the answer (after).
 *
 * @internal
 */
export const toSdk = (
  handler: RequestHandler,
  runtime: Runtime.Runtime<never>,
  failed: (cause: Cause.Cause<unknown>, operation: string) => unknown = Cause.squash,
  called?: (context: ServerCallContext) => void
): A2ARequestHandler => {
  const runFork = Runtime.runFork(runtime)
  // The call's fiber, observed: `Runtime.runPromiseExit` would keep the call's whole Effect (its closures) as long
  // as the fiber runs, a blocking send's whole run.
  const settled = <A, E>(operation: string, fiber: Fiber.RuntimeFiber<A, E>): Promise<A> =>
    new Promise((resolve, reject) =>
      fiber.addObserver((exit) => Exit.isSuccess(exit) ? resolve(exit.value) : reject(failed(exit.cause, operation)))
    )
  const promise = <A, E>(operation: string, effect: Effect.Effect<A, E>, context?: ServerCallContext): Promise<A> => {
    if (context !== undefined) called?.(context)
    return settled(operation, runFork(effect))
  }
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
      promise("getAuthenticatedExtendedAgentCard", handler.extendedAgentCard(context), context),
    sendMessage: (params, context) => promise("sendMessage", handler.sendMessage(params, context), context),
    sendMessageStream: (params, context) => generator("sendMessageStream", handler.sendMessageStream(params, context)),
    getTask: (params, context) => promise("getTask", handler.getTask(params, context), context),
    listTasks: (params, context) => promise("listTasks", handler.listTasks(params, context), context),
    cancelTask: (params, context) => promise("cancelTask", handler.cancelTask(params, context), context),
    resubscribe: (params, context) => generator("resubscribe", handler.resubscribe(params, context)),
    createTaskPushNotificationConfig: (params, context) =>
      promise("createTaskPushNotificationConfig", handler.createPushConfig(params, context), context),
    getTaskPushNotificationConfig: (params, context) =>
      promise("getTaskPushNotificationConfig", handler.getPushConfig(params, context), context),
    listTaskPushNotificationConfigs: (params, context) =>
      promise("listTaskPushNotificationConfigs", handler.listPushConfigs(params, context), context),
    deleteTaskPushNotificationConfig: (params, context) =>
      promise("deleteTaskPushNotificationConfig", handler.deletePushConfig(params, context), context)
  }
}
