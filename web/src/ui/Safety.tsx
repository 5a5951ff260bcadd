// What keeps a change from being lost or regretted: the mark on an event whose change the server
// has not taken (with Retry and Discard) or its provider calendar does not have, and the toast that undoes the last change (also Ctrl/Cmd+Z).
import { useEffect, useId, useState } from 'preact/hooks'
import './safety.css'
import { useStore } from '../data/store.js'
import { session } from '../data/session.js'
import { discardWrite, pendingWrites, retryWrite } from '../data/pending.js'
import { undoStack } from '../data/undo.js'
import { notify, undo } from '../data/calendar.js'
import { markOf } from '../lib/pending-writes.js'
import type { CalendarEvent } from '../lib/events.js'

const TOAST_MS = 8000

/** On an event block: nothing while its changes are saved; otherwise what is wrong and what to do. */
export function WriteMark (props: { event: CalendarEvent }) {
  const state = useStore(session)
  const data = useStore(pendingWrites)
  const reasonId = useId()
  if (state.status !== 'signedIn') return null
  const mark = markOf(data, state.userId, props.event._id)
  const title = props.event.title === '' ? '(No title)' : props.event.title
  if (mark === null) {
    // Saved here, but not at its provider calendar: said on the block, the reason in full in the dialog.
    const issue = props.event.syncIssue
    if (issue === undefined) return null
    return (
      <div class='write-mark write-mark-unsynced' role='group' aria-label={`Not synced: ${title}`} title={issue.message}>
        <span class='write-mark-text'>Not synced</span>
        <span class='sr-only'>. {issue.message}</span>
      </div>
    )
  }
  const label = mark.deletion ? 'Deletion not saved' : 'Not saved'
  // The reason is on the page (no pointer needed to read it) and describes both buttons, so a
  // screen reader says it on reaching either; the label above it already says "Not saved".
  return (
    <div class={`write-mark write-mark-${mark.state}`} role='group' aria-label={`${label}: ${title}`}>
      <span class='write-mark-text'>{label}</span>
      <button type='button' aria-describedby={reasonId} onClick={() => retryWrite(mark.seq)}>Retry</button>
      <button type='button' aria-describedby={reasonId} onClick={() => { discardWrite(mark.seq).catch(() => {}) }}>Discard</button>
      <p class='write-mark-reason' id={reasonId}>{mark.reason.replace(/^Not saved( yet)?: /, '')}</p>
    </div>
  )
}

function typing (target: EventTarget | null): boolean {
  if (!(target instanceof HTMLElement)) return false
  return target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName)
}

/** An undo that failed on the way says so: its entry is gone, and nothing else would tell. */
function undoOrSay (id?: number): void {
  undo(id).catch((error: unknown) => { notify(`Could not undo: ${error instanceof Error ? error.message : String(error)}`, 'error') })
}

/** The newest undoable change for a few seconds, and Ctrl/Cmd+Z for any kept one (not while typing or in a dialog). */
export function UndoToast () {
  const stack = useStore(undoStack)
  const newest = stack[stack.length - 1]
  const [shownId, setShownId] = useState<number | null>(null)

  useEffect(() => {
    if (newest === undefined) {
      setShownId(null)
      return
    }
    setShownId(newest.id)
    const timer = setTimeout(() => setShownId(null), TOAST_MS)
    return () => clearTimeout(timer)
  }, [newest?.id])

  useEffect(() => {
    const onKey = (key: KeyboardEvent) => {
      if (!(key.ctrlKey || key.metaKey) || key.shiftKey || key.altKey || key.key.toLowerCase() !== 'z') return
      if (typing(key.target) || document.querySelector('dialog[open]') !== null) return
      key.preventDefault()
      undoOrSay()
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [])

  if (newest === undefined || shownId !== newest.id) return null
  return (
    <div class='undo-toast' role='status'>
      <span>{newest.label}.</span>
      <button type='button' aria-keyshortcuts='Control+Z Meta+Z' onClick={() => { undoOrSay(newest.id) }}>Undo</button>
    </div>
  )
}
