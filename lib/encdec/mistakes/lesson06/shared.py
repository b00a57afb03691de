"""What several of Lesson 6's mistake modules share: the reference embedding `embed_`."""

from ...model import Seq2Seq

embed_ = Seq2Seq.embed  # the reference embedding, used by the encode and decode mistakes
