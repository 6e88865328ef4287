"""Proposal: a pending tool call that waits for a person.

The SDK never approves a proposal: :meth:`Proposal.approve` is the only code
that marks one approved (a test checks this over the package source), and
it needs the id of the person who confirmed.  A policy callback's "allow" is
recorded in ``policy_decision`` and changes nothing else.

Approval comes only from application code outside the run: the policy
callback, which runs inside it, gets a :class:`ProposalView` (what the call
is, with no way to decide it), and a Proposal cannot be approved or
rejected before the run has returned it (``outcome.proposal``).

Thread rule: a Proposal may be read, approved or rejected from any thread;
the first decision wins (the others raise), and a cancel that voids it
wins over an approval that comes later.
"""

from __future__ import annotations

import copy
import threading
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import CancelledError, InvalidArgumentError

__all__ = ["Proposal", "ProposalStatus", "ProposalView"]

ProposalStatus = Literal["pending", "approved", "rejected", "voided"]


@dataclass(frozen=True)
class ProposalView:
    """What a policy callback sees of a proposed call: the tool's name, a
    copy of the arguments, the call id and the tool's registered effect and
    flags.  Read-only, and with no way to approve or reject: a policy
    answers "allow" (recorded, not a confirmation) or "deny"."""

    tool: str
    arguments: dict[str, Any]
    call_id: str
    effect: str
    reads_private_data: bool
    sends_out: bool
    confirmation_required: bool


class Proposal:
    """``tool`` (name), ``arguments`` (a copy of the validated arguments),
    ``call_id``; decided once by :meth:`approve` or :meth:`reject`."""

    def __init__(
        self, *, tool: str, arguments: dict[str, Any], call_id: str, owner: object
    ) -> None:
        self.tool = tool
        self.arguments = copy.deepcopy(arguments)
        self.call_id = call_id
        self._owner = owner
        self._lock = threading.Lock()
        self._confirmed_by: str | None = None
        self._rejected: str | None = None  # the reason, once rejected
        self._voided = False
        self._policy_decision: str | None = None
        self._offered = False  # returned to the application: decisions allowed

    # -- what the application reads -------------------------------------
    @property
    def status(self) -> ProposalStatus:
        if self._voided:
            return "voided"
        if self._confirmed_by is not None:
            return "approved"
        return "rejected" if self._rejected is not None else "pending"

    @property
    def confirmed_by(self) -> str | None:
        """The person who approved, or None."""
        return self._confirmed_by

    @property
    def reason(self) -> str | None:
        """Why it was rejected, or None."""
        return self._rejected

    @property
    def policy_decision(self) -> str | None:
        """What the policy callback answered ("allow", "deny"), or None.
        "allow" is not a confirmation."""
        return self._policy_decision

    # -- decisions --------------------------------------------------------
    def approve(self, *, confirmed_by: str) -> None:
        """Approves the call on behalf of the person `confirmed_by` (a
        non-empty id).  Once only; a voided proposal raises CancelledError;
        before the run returned the proposal, InvalidArgumentError."""
        if not isinstance(confirmed_by, str) or not confirmed_by.strip():
            raise InvalidArgumentError(
                f"approve() needs the non-empty id of the person who confirmed, got "
                f"{confirmed_by!r}"
            )
        with self._lock:
            self._require_pending("approve")
            self._confirmed_by = confirmed_by

    def reject(self, *, reason: str = "") -> None:
        """Rejects the call; the model is told, with `reason`.  Once only."""
        if not isinstance(reason, str):
            raise InvalidArgumentError(f"reason must be a string, got {reason!r}")
        with self._lock:
            self._require_pending("reject")
            self._rejected = reason

    def _require_pending(self, verb: str) -> None:
        if not self._offered:
            raise InvalidArgumentError(
                f"cannot {verb}: the proposal {self.call_id} has not been returned to the "
                "application (only a person decides, after run() returns it)"
            )
        state = self.status
        if state == "voided":
            raise CancelledError(
                f"cannot {verb}: the proposal {self.call_id} was voided by a cancel"
            )
        if state != "pending":
            raise InvalidArgumentError(
                f"cannot {verb}: the proposal {self.call_id} is already {state} (decide once)"
            )

    # -- the agent's side -------------------------------------------------
    def _view(self, tool: Any) -> ProposalView:
        """The read-only view a policy callback gets (`tool`: the Tool)."""
        return ProposalView(
            tool=self.tool, arguments=copy.deepcopy(self.arguments), call_id=self.call_id,
            effect=tool.effect, reads_private_data=tool.reads_private_data,
            sends_out=tool.sends_out, confirmation_required=tool.confirmation_required)

    def _record_policy(self, decision: str | None) -> None:
        """Records the policy's answer; "deny" rejects the proposal."""
        with self._lock:
            self._policy_decision = decision
            if decision == "deny":
                self._rejected = "denied by policy"

    def _offer(self) -> None:
        """The run returns the proposal to the application: from now on a
        person may approve or reject it."""
        with self._lock:
            self._offered = True

    def _void(self) -> bool:
        """Voids the proposal of a paused run that was cancelled: decided or
        not, its call will never run."""
        with self._lock:
            if self._voided:
                return False
            self._voided = True
            return True

    def __repr__(self) -> str:
        return (f"Proposal(tool={self.tool!r}, arguments={self.arguments!r}, "
                f"call_id={self.call_id!r}, status={self.status!r})")
