"""The baseline: a bare DRF view that authenticates the client and reads one row."""
from rest_framework.response import Response
from rest_framework.views import APIView

from toolregistry.models import AgentSession


class BareSessionView(APIView):
    def get(self, request, session):
        row = AgentSession.objects.filter(public_id=session, client=request.user).values("public_id", "profile").first()
        return Response(row or {}, status=200 if row else 404)
