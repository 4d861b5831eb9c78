"""The ``agentloop`` command: ``demo``, and the faces (``serve``, ``chat``) as they arrive."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="agentloop",
    help="agentloop: an agentic tool-calling runtime.",
    no_args_is_help=True,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """agentloop: an agentic tool-calling runtime (library, gateway and console)."""


@app.command()
def demo() -> None:
    """Run an offline scripted scenario: parallel calls, a cache hit, an approval pause and
    resume, and a final answer."""
    from agentloop.demo import main as run_demo

    run_demo()


__import__("agentloop.gateway.cli", fromlist=["register"]).register(app)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
