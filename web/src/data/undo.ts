// The changes this tab can undo, newest last: the toast offers the newest, Ctrl/Cmd+Z takes them
// back one by one.
import { createStore } from './store.js'
import type { Undo } from '../lib/undo.js'

export interface UndoEntry extends Undo {
  id: number
  /** An undo in the signed-out calendar of a demo event keeps it a demo event. */
  demo: boolean
  mode: 'local' | 'account'
}

const KEPT = 20

export const undoStack = createStore<UndoEntry[]>([])
let nextId = 0

export function pushUndo (entry: Omit<UndoEntry, 'id'>): void {
  const id = ++nextId
  undoStack.set((list) => [...list.slice(-(KEPT - 1)), { ...entry, id }])
}

export function takeUndo (id?: number): UndoEntry | null {
  const list = undoStack.get()
  const entry = id === undefined ? list[list.length - 1] : list.find((item) => item.id === id)
  if (entry === undefined) return null
  undoStack.set(list.filter((item) => item.id !== entry.id))
  return entry
}

/** After a sign-in or sign-out the other mode's changes cannot be undone here. */
export function clearUndo (): void {
  undoStack.set([])
}
