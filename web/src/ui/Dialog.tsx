// A modal dialog on the native <dialog>: the browser makes the page behind it inert, moves focus
// into it and closes it on Escape; this puts focus back where it was when the dialog closes.
// Its content may change while it stays open (an event's details, then its form): `view` names
// what is shown, and focus moves into the new content as it did on opening.
import type { ComponentChildren } from 'preact'
import { useEffect, useRef } from 'preact/hooks'

function focusFirst (dialog: HTMLDialogElement): void {
  // One query with both would take whichever comes first in the document, not the marked one.
  const first = dialog.querySelector<HTMLElement>('[autofocus]') ?? dialog.querySelector<HTMLElement>('input:not([type=hidden]), select, textarea, button')
  first?.focus()
}

export function Dialog (props: { open: boolean, labelledBy: string, onClose: () => void, children: ComponentChildren, class?: string, view?: string }) {
  const ref = useRef<HTMLDialogElement>(null)
  const opener = useRef<Element | null>(null)
  const shownView = useRef<string | undefined>(undefined)
  useEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    if (props.open && !dialog.open) {
      opener.current = document.activeElement
      dialog.showModal()
      shownView.current = props.view
      focusFirst(dialog)
    } else if (!props.open && dialog.open) {
      dialog.close()
    } else if (props.open && shownView.current !== props.view) {
      shownView.current = props.view
      focusFirst(dialog)
    }
  }, [props.open, props.view])
  useEffect(() => {
    const dialog = ref.current
    if (dialog === null) return
    const onClose = () => {
      const back = opener.current
      opener.current = null
      if (back instanceof HTMLElement && back.isConnected) back.focus()
      props.onClose()
    }
    dialog.addEventListener('close', onClose)
    return () => dialog.removeEventListener('close', onClose)
  }, [props.onClose])
  return (
    <dialog ref={ref} aria-labelledby={props.labelledBy} class={props.class ?? 'dialog'}>
      {props.open ? props.children : null}
    </dialog>
  )
}
