/**
 * The server's request handler: every A2A operation as an Effect (a stream
 * as a `Stream`), over the `TaskStore` service and the channels of the
 * tasks with a run in progress (see `channel.ts`). It keeps every check the
 * SDK's `DefaultRequestHandler` makes and answers as it answers; HTTP+JSON
 * and gRPC call it as it is, the SDK's JSON-RPC codecs through
 * `sdkHandler.ts`. Its operations are in
 * `send.ts` and `tasks.ts`, what they share in `core.ts`: the room of the
 * task lifecycle, above the task stores and the run.
 *
 * A run's events are appended to the store before anyone is handed them:
 * what a caller or subscriber has, GetTask shows, and a run's end is in the
 * store once its run ends (the executor waits for its final event's append).
 *
 * @internal
 */
import {
  ExtendedAgentCardNotConfiguredError,
  PushNotificationNotSupportedError,
  TaskNotFoundError,
  UnsupportedOperationError
} from "@a2a-js/sdk/errors"
import type { PushNotificationStore, ServerCallContext } from "@a2a-js/sdk/server"
import * as Effect from "effect/Effect"
import type { TaskStore } from "../store/store.js"
import { type Failure, makeCore, type Options, RequestHandler, requireTaskId } from "./core.js"
import { makeSend, type Resuming } from "./send.js"
import { makeTasks } from "./tasks.js"

export type { Failure, Options } from "./core.js"
export type { Resuming } from "./send.js"
export { RequestHandler }

/** @internal */
export const make = (options: Options): Effect.Effect<RequestHandler & Resuming, never, TaskStore> =>
  Effect.map(makeCore(options), (core): RequestHandler & Resuming => {
    const { found, pushStore } = core
    const { card } = options
    // The push config methods, each on a task the caller can see; refused when the card declares no push.
    const pushConfigs = <A>(
      taskId: string | undefined,
      context: ServerCallContext,
      use: (store: PushNotificationStore, taskId: string) => Promise<A>
    ): Effect.Effect<A, Failure> =>
      Effect.gen(function*() {
        if (pushStore === undefined) return yield* Effect.fail(new PushNotificationNotSupportedError())
        const id = yield* requireTaskId(taskId)
        yield* found(id, context)
        return yield* Effect.promise(() => use(pushStore, id))
      })

    return {
      agentCard: Effect.succeed(card),
      extendedAgentCard: (context) =>
        !card.capabilities?.extendedAgentCard
          ? Effect.fail(new UnsupportedOperationError("Agent does not support authenticated extended card."))
          : options.extendedCard === undefined
          ? Effect.fail(new ExtendedAgentCardNotConfiguredError())
          : Effect.succeed(context.user?.isAuthenticated ? options.extendedCard : card),
      ...makeSend(core),
      ...makeTasks(core),
      createPushConfig: (params, context) =>
        pushConfigs(params.taskId, context, async (configs, taskId) => {
          await configs.save(taskId, context, params)
          return structuredClone(params)
        }),
      getPushConfig: (params, context) =>
        Effect.flatMap(
          pushConfigs(params.taskId, context, (configs, taskId) => configs.load(taskId, context)),
          (configs) => {
            if (configs.length === 0) {
              return Effect.fail(new TaskNotFoundError(`Push notification config not found for task ${params.taskId}.`))
            }
            const config = configs.find((known) => known.id === params.id)
            return config === undefined
              ? Effect.fail(
                new TaskNotFoundError(
                  `Push notification config with id '${params.id}' not found for task ${params.taskId}.`
                )
              )
              : Effect.succeed(config)
          }
        ),
      listPushConfigs: (params, context) =>
        pushConfigs(params.taskId, context, async (configs, taskId) => ({
          configs: await configs.load(taskId, context),
          nextPageToken: ""
        })),
      deletePushConfig: (params, context) =>
        pushConfigs(params.taskId, context, (configs, taskId) => configs.delete(taskId, context, params.id))
    }
  })
