"""HTTP routes of the accounts context: sign-up, login, logout, user admin."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

from litestar import Controller, Request, get, post
from litestar.params import FromPath, JSONBody, Parameter
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from app.accounts.auth import PUBLIC_OPT_KEY, principal_of, requires_role
from app.accounts.schemas import (
    LoginRequest,
    PasswordChange,
    PasswordChanged,
    SignupRequest,
    TokenRead,
    UserCreate,
    UserRead,
)
from app.accounts.service import AccountService
from app.api.deps import AppSettings, DbSession
from app.api.openapi import error_response

__all__ = ("AdminUsersController", "AuthController")


class AuthController(Controller):
    """Player sign-up and the token lifecycle."""

    path = "/auth"
    tags = ["accounts"]

    @post(
        "/signup", operation_id="signup", status_code=HTTP_201_CREATED, opt={PUBLIC_OPT_KEY: True}
    )
    async def signup(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[SignupRequest],
        db_session: DbSession,
        settings: AppSettings,
    ) -> UserRead:
        """Create a player account (throttled per client address)."""
        remote = request.client.host if request.client else None
        user = await AccountService(db_session, settings).sign_up(
            data.username, data.password, remote
        )
        return UserRead.of(user)

    @post(
        "/login",
        operation_id="login",
        status_code=HTTP_200_OK,
        opt={PUBLIC_OPT_KEY: True},
        responses={
            403: error_response(
                "The password matched but the account is suspended (account_suspended)"
            )
        },
    )
    async def login(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[LoginRequest],
        db_session: DbSession,
        settings: AppSettings,
    ) -> TokenRead:
        """Exchange credentials for a bearer token (throttled after repeated failures)."""
        remote = request.client.host if request.client else None
        issued = await AccountService(db_session, settings).login(
            data.username, data.password, remote, data.device_token
        )
        return TokenRead(
            token=issued.token,
            expires_at=issued.expires_at,
            user=UserRead.of(issued.user),
            device_token=issued.device_token,
        )

    @post("/password", operation_id="changePassword", status_code=HTTP_200_OK)
    async def change_password(
        self,
        request: Request[Any, Any, Any],
        data: JSONBody[PasswordChange],
        db_session: DbSession,
        settings: AppSettings,
    ) -> PasswordChanged:
        """Change the caller's password (the current one is required, and throttled as a
        login); every other token of the caller is revoked."""
        remote = request.client.host if request.client else None
        revoked = await AccountService(db_session, settings).change_password(
            principal_of(request),
            data.current_password,
            data.new_password,
            remote,
            data.device_token,
        )
        return PasswordChanged(revoked_tokens=revoked)

    @post("/logout", operation_id="logout", status_code=HTTP_204_NO_CONTENT)
    async def logout(
        self, request: Request[Any, Any, Any], db_session: DbSession, settings: AppSettings
    ) -> None:
        """Revoke the token used for this request."""
        principal = principal_of(request)
        if principal.token_id is not None:
            await AccountService(db_session, settings).revoke_token(principal.token_id)

    @get("/me", operation_id="me")
    async def me(
        self, request: Request[Any, Any, Any], db_session: DbSession, settings: AppSettings
    ) -> UserRead:
        """The authenticated user."""
        user = await AccountService(db_session, settings).get_user(principal_of(request).user_id)
        return UserRead.of(user)


class AdminUsersController(Controller):
    """Operator-only user administration."""

    path = "/admin/users"
    tags = ["admin"]
    guards = [requires_role("operator")]

    @get("/", operation_id="listUsers")
    async def list_users(
        self,
        *,
        db_session: DbSession,
        settings: AppSettings,
        limit: Annotated[int, Parameter(ge=1, le=500)] = 100,
        offset: Annotated[int, Parameter(ge=0, le=10_000_000)] = 0,
        after: Annotated[
            uuid.UUID | None,
            Parameter(
                description=(
                    "The last user of the previous page: this page starts after it (keyset "
                    "pagination; stable while users sign up, unlike offset, which is applied "
                    "after it)."
                )
            ),
        ] = None,
        suspended: Annotated[
            bool | None,
            Parameter(
                description="true: only suspended accounts (self-excluded ones included); "
                "false: only the others."
            ),
        ] = None,
    ) -> list[UserRead]:
        """Users, oldest first; ``after`` (a user id, the last one of the previous page)
        pages on; ``suspended`` filters."""
        users = await AccountService(db_session, settings).list_users(
            limit=limit, offset=offset, after=after, suspended=suspended
        )
        return [UserRead.of(user) for user in users]

    @post("/", operation_id="createUser", status_code=HTTP_201_CREATED)
    async def create_user(
        self, data: JSONBody[UserCreate], db_session: DbSession, settings: AppSettings
    ) -> UserRead:
        """Create a user with any role (compliance staff, operators, players)."""
        user = await AccountService(db_session, settings).create_user(
            data.username, data.password, data.role
        )
        return UserRead.of(user)

    @post(
        "/{user_id:uuid}/revoke-tokens",
        operation_id="revokeUserTokens",
        status_code=HTTP_200_OK,
    )
    async def revoke_tokens(
        self, user_id: FromPath[uuid.UUID], db_session: DbSession, settings: AppSettings
    ) -> dict[str, int]:
        """Revoke every live token of a user (e.g. a stolen device)."""
        revoked = await AccountService(db_session, settings).revoke_all_tokens(user_id)
        return {"revoked": revoked}
