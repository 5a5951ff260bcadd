/** Source of the current time; every time-based rule of the Sync service reads it, so tests can move time. */
export interface Clock {
  now: () => Date
}

export const systemClock: Clock = { now: () => new Date() }
