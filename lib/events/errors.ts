import { TypedHttpError } from '../error-bodies.js'
import type { PersistencePlan, TransitionResult } from './transition.js'

/** A refusal of an event request; the app's error handler answers it with the status, code and message. */
export class EventRequestError extends TypedHttpError {}

export function invalidEvent (path: string, message: string, code = 'EVENT_INVALID'): EventRequestError {
  return new EventRequestError(400, code, `${path} ${message}`)
}

export function eventNotFound (): EventRequestError {
  return new EventRequestError(404, 'EVENT_NOT_FOUND', 'Event not found')
}

/** The plan of an allowed transition; a refused one is answered with its reason. */
export function planned (result: TransitionResult): PersistencePlan {
  if (!result.ok) throw new EventRequestError(400, 'EVENT_CHANGE_NOT_ALLOWED', `This change is not allowed: ${result.reason}`)
  return result.plan
}
